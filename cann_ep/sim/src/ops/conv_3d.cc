// Conv3DV2 and Conv3DBackpropInputV2 (its input gradient; at the end of the file).
//
// Conv3DV2 (hicann/ops-nn conv/conv3d_v2: README.md, op_graph/conv3d_v2_proto.h): 3-D convolution
// of x [N, C, D, H, W] with filter [M, C/groups, KD, KH, KW] and an optional bias [M].
//
// Prototype: inputs (x, filter, bias, scale, offset, offset_w), output y; attrs strides (required,
// 5 values in x's NCDHW order, N and C entries 1), pads (6 values [head, tail, top, bottom, left,
// right], default 0s), dilations (5 values, default 1s), groups (1), data_format ("NCDHW"), offset_x
// (0), pad_mode ("SPECIFIC"), enable_hf32 (false). Simulated: float32, float16, bfloat16 (x, filter,
// bias and y of one dtype), NCDHW; int8 / hifloat8 (scale, offset, offset_w) are not. The README's
// Atlas A2/A3 limits, checked: strides h, w in [1, 63] (d in [1, 1000000]); pads h, w in [0, 255];
// dilations h, w in [1, 255]; filter H, W in [1, 511]; no empty tensor; no pad_mode (other than
// its default); groups in [1, 65535] with groups x filter C = x C. Output extent (README):
// (in + pads - (dilation (K - 1) + 1)) / stride + 1 per axis.
//
// Numerics as Conv2D's (conv.cc): per output element acc = 0.0f, then for each input channel of
// the group, kd, kh, kw in increasing order acc = acc + x * w (each product and sum rounded to
// float32, no FMA; padding contributes x = 0 terms), + bias, one rounding to y's dtype. enable_hf32
// (HF32 products on the cube unit) is not simulated: it must be false.
#include <array>
#include <initializer_list>
#include <type_traits>

#include "dtypes.h"
#include "numerics.h"
#include "op_call.h"

namespace aclsim {
namespace {

struct Geom3 {
  std::array<int64_t, 3> in, k, out, stride, dilation, front, back;
  int64_t n, c, m, kc, groups;
  bool bias;
};

template <typename T>
void conv3d(const OpCall& c, const Geom3& g) {
  const auto* X = ptr<T>(c.in[0].data);
  const auto* W = ptr<T>(c.in[1].data);
  const auto* B = g.bias ? ptr<T>(c.in[2].data) : nullptr;
  auto* Y = ptr<T>(c.out[0].data);
  const int64_t plane = g.in[0] * g.in[1] * g.in[2], kplane = g.k[0] * g.k[1] * g.k[2];
  const int64_t oplane = g.out[0] * g.out[1] * g.out[2], m_per_group = g.m / g.groups;
  for (int64_t ni = 0; ni < g.n; ++ni)
    for (int64_t mi = 0; mi < g.m; ++mi) {
      const int64_t c0 = (mi / m_per_group) * g.kc;
      auto* ym = Y + (ni * g.m + mi) * oplane;
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            float acc = 0.0f;
            for (int64_t ci = 0; ci < g.kc; ++ci) {
              const auto* xc = X + (ni * g.c + c0 + ci) * plane;
              const auto* wc = W + (mi * g.kc + ci) * kplane;
              for (int64_t kd = 0; kd < g.k[0]; ++kd) {
                const int64_t id = od * g.stride[0] - g.front[0] + kd * g.dilation[0];
                for (int64_t kh = 0; kh < g.k[1]; ++kh) {
                  const int64_t ih = oh * g.stride[1] - g.front[1] + kh * g.dilation[1];
                  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                    const int64_t iw = ow * g.stride[2] - g.front[2] + kw * g.dilation[2];
                    const bool inside = id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 && iw < g.in[2];
                    const float xv =
                        inside ? static_cast<float>(T::load(xc[(id * g.in[1] + ih) * g.in[2] + iw])) : 0.0f;
                    const float wv = static_cast<float>(T::load(wc[(kd * g.k[1] + kh) * g.k[2] + kw]));
                    const float prod = xv * wv;
                    acc = acc + prod;
                  }
                }
              }
            }
            if (B != nullptr) acc = acc + static_cast<float>(T::load(B[mi]));
            ym[(od * g.out[1] + oh) * g.out[2] + ow] = T::store(static_cast<typename T::Compute>(acc));
          }
    }
}

aclError attr_fail(const OpCall& c, const char* name, const std::vector<int64_t>& v, const char* want) {
  return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute %s is %s, expected %s", c.type.c_str(), name,
              shape_str(v).c_str(), want);
}

// strides / dilations: 5 values [1, 1, d, h, w] within [1, max_d] (d) and [1, max_hw] (h, w).
aclError read_spatial(const OpCall& c, const char* name, bool required, int64_t max_d, int64_t max_hw,
                      std::array<int64_t, 3>* out) {
  if (!c.has_attr(name)) {
    if (required)
      return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: required attribute %s is missing", c.type.c_str(), name);
    *out = {1, 1, 1};
    return ACL_SUCCESS;
  }
  const std::vector<int64_t> v = c.attr_list(name);
  if (v.size() != 5 || v[0] != 1 || v[1] != 1 || v[2] < 1 || v[2] > max_d || v[3] < 1 || v[3] > max_hw || v[4] < 1 ||
      v[4] > max_hw) {
    const std::string want = "5 values [1, 1, d, h, w] (NCDHW order), d in [1, " + std::to_string(max_d) +
                             "], h and w in [1, " + std::to_string(max_hw) + "] (README, Atlas A2/A3)";
    return attr_fail(c, name, v, want.c_str());
  }
  *out = {v[2], v[3], v[4]};
  return ACL_SUCCESS;
}

// A tensor of the call and its name in errors.
struct NamedTensor {
  const OpTensor* tensor;
  const char* what;
};

// Each of `tensors` 5-D (NCDHW), else an error naming the first that is not (an output's:
// ACL_ERROR_OP_OUTPUT_NOT_MATCH).
aclError expect_5d(const OpCall& c, std::initializer_list<NamedTensor> tensors) {
  for (const NamedTensor& n : tensors)
    if (n.tensor->dims.size() != 5)
      return fail(n.tensor == &c.out[0] ? ACL_ERROR_OP_OUTPUT_NOT_MATCH : ACL_ERROR_OP_INPUT_NOT_MATCH,
                  "%s: %s has shape %s, expected 5-D NCDHW", c.type.c_str(), n.what, shape_str(n.tensor->dims).c_str());
  return ACL_SUCCESS;
}

// Reads attribute groups (default 1) into g->groups: in [1, 65535], the data's channels (`channels`,
// e.g. "x C") = the filter's C * groups and the filter's N divisible by groups, else an error
// naming the data (`data`, of dims `dims`) and the filter.
aclError read_groups(const OpCall& c, const char* data, const std::vector<int64_t>& dims, const char* channels,
                     const OpTensor& f, Geom3* g) {
  g->groups = c.attr_int("groups", 1);
  if (g->groups < 1 || g->groups > 65535 || g->c != g->kc * g->groups || g->m % g->groups != 0)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "%s: %s %s and filter %s do not fit groups=%lld (groups in [1, 65535], %s = filter C * groups, "
                "filter N divisible by groups)",
                c.type.c_str(), data, shape_str(dims).c_str(), shape_str(f.dims).c_str(),
                static_cast<long long>(g->groups), channels);
  return ACL_SUCCESS;
}

}  // namespace

aclError k_conv3d_v2(const OpCall& c, Run* run) {
  const char* op = c.type.c_str();
  if (c.in.size() < 2 || c.in.size() > 6)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "%s: expected 2 to 6 inputs (x, filter, bias, scale, offset, offset_w), got %zu", op, c.in.size());
  if (c.out.size() != 1) return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "%s: expected 1 output, got %zu", op, c.out.size());
  const OpTensor &x = c.in[0], &f = c.in[1], &y = c.out[0];
  if (x.absent || f.absent)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input %d (%s) is required", op, x.absent ? 0 : 1,
                x.absent ? "x" : "filter");
  for (size_t i = 3; i < c.in.size(); ++i)
    if (!c.in[i].absent)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input %zu (%s, int8 quantisation) is not simulated", op, i,
                  i == 3   ? "scale"
                  : i == 4 ? "offset"
                           : "offset_w");
  const bool has_bias = c.in.size() >= 3 && !c.in[2].absent;
  if (aclError rc = expect_dtype_in(c, "input 0 (x)", x, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  if (aclError rc = expect_same_dtype(c, "input 1 (filter)", f, "input 0 (x)", x)) return rc;
  if (has_bias)
    if (aclError rc = expect_same_dtype(c, "input 2 (bias)", c.in[2], "input 0 (x)", x)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  if (aclError rc = expect_5d(c, {{&x, "input 0 (x)"}, {&f, "input 1 (filter)"}, {&y, "output 0 (y)"}})) return rc;
  const std::string format = c.attr_string("data_format", "NCDHW");
  if (format != "NCDHW")
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute data_format is \"%s\"; the simulator implements NCDHW only",
                op, format.c_str());
  if (c.attr_string("pad_mode", "SPECIFIC") != "SPECIFIC")
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute pad_mode is not supported on Atlas A2/A3 (README)", op);
  if (c.attr_int("offset_x", 0) != 0)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute offset_x (int8 quantisation) must be 0", op);
  if (c.attr_int("enable_hf32", 0) != 0)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute enable_hf32 (HF32 products) is not simulated", op);

  Geom3 g{};
  g.n = x.dims[0], g.c = x.dims[1], g.m = f.dims[0], g.kc = f.dims[1], g.bias = has_bias;
  for (int i = 0; i < 3; ++i) g.in[i] = x.dims[2 + i], g.k[i] = f.dims[2 + i];
  for (const OpTensor* t : {&x, &f, &y})
    for (int64_t d : t->dims)
      if (d < 1)
        return fail(t == &y ? ACL_ERROR_OP_OUTPUT_NOT_MATCH : ACL_ERROR_OP_INPUT_NOT_MATCH,
                    "%s: empty tensors are not supported (README, Atlas A2/A3): shape %s", op,
                    shape_str(t->dims).c_str());
  if (g.k[1] > 511 || g.k[2] > 511)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 1 (filter) has shape %s: H and W must be in [1, 511]", op,
                shape_str(f.dims).c_str());
  if (aclError rc = read_spatial(c, "strides", true, 1000000, 63, &g.stride)) return rc;
  if (aclError rc = read_spatial(c, "dilations", false, 1000000, 255, &g.dilation)) return rc;
  std::vector<int64_t> pads = c.has_attr("pads") ? c.attr_list("pads") : std::vector<int64_t>(6, 0);
  bool pads_ok = pads.size() == 6;
  for (size_t i = 0; pads_ok && i < 6; ++i) pads_ok = pads[i] >= 0 && pads[i] <= (i < 2 ? 1000000 : 255);
  if (!pads_ok)
    return attr_fail(c, "pads", pads,
                     "6 values [head, tail, top, bottom, left, right], d in [0, 1000000], h and w in [0, 255]");
  for (int i = 0; i < 3; ++i) g.front[i] = pads[2 * i], g.back[i] = pads[2 * i + 1];
  if (aclError rc = read_groups(c, "x", x.dims, "x C", f, &g)) return rc;
  if (has_bias && (c.in[2].dims.size() != 1 || c.in[2].dims[0] != g.m))
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 2 (bias) has shape %s, expected [%lld]", op,
                shape_str(c.in[2].dims).c_str(), static_cast<long long>(g.m));
  std::vector<int64_t> want{g.n, g.m};
  for (int i = 0; i < 3; ++i) {
    const int64_t extent = g.dilation[i] * (g.k[i] - 1) + 1, padded = g.in[i] + g.front[i] + g.back[i];
    if (padded < extent)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: padded input %s is smaller than the dilated filter along axis %d",
                  op, shape_str(x.dims).c_str(), 2 + i);
    g.out[i] = (padded - extent) / g.stride[i] + 1;
    want.push_back(g.out[i]);
  }
  if (y.dims != want)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "%s: output 0 (y) has shape %s, expected %s", op,
                shape_str(y.dims).c_str(), shape_str(want).c_str());
  visit_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same<T, F32>::value || std::is_same<T, F16>::value || std::is_same<T, BF16>::value)
      *run = [c, g] { conv3d<T>(c, g); };
  });
  return ACL_SUCCESS;
}

namespace {

// dx[n, c, p] = sum over m of c's group, then kd, kh, kw (increasing) of dy[n, m, o] * filter[m, c -
// group start, k] where o = (p + front - k * dilation) / stride is integral and inside dy per axis;
// float32 accumulation from 0 (each product and sum rounded, no FMA; numerics.h's NaN rule, as
// Conv2DBackpropInput's), one rounding at the end.
template <typename T>
void conv3d_backprop_input(const OpCall& c, const Geom3& g) {
  const void* W = c.in[1].data;
  const void* DY = c.in[2].data;
  void* DX = c.out[0].data;
  const int64_t m_per_group = g.m / g.groups, kplane = g.k[0] * g.k[1] * g.k[2];
  int64_t at = 0;
  for (int64_t ni = 0; ni < g.n; ++ni)
    for (int64_t ci = 0; ci < g.c; ++ci) {
      const int64_t grp = ci / g.kc, cw = ci - grp * g.kc;
      for (int64_t pd = 0; pd < g.in[0]; ++pd)
        for (int64_t ph = 0; ph < g.in[1]; ++ph)
          for (int64_t pw = 0; pw < g.in[2]; ++pw, ++at) {
            const int64_t p[3] = {pd, ph, pw};
            float acc = 0.0f;
            for (int64_t mi = grp * m_per_group; mi < (grp + 1) * m_per_group; ++mi)
              for (int64_t kd = 0; kd < g.k[0]; ++kd)
                for (int64_t kh = 0; kh < g.k[1]; ++kh)
                  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                    const int64_t k[3] = {kd, kh, kw};
                    int64_t o = 0;
                    bool inside = true;
                    for (int a = 0; a < 3 && inside; ++a) {
                      const int64_t t = p[a] + g.front[a] - k[a] * g.dilation[a];
                      inside = t >= 0 && t % g.stride[a] == 0 && t / g.stride[a] < g.out[a];
                      o = o * g.out[a] + (inside ? t / g.stride[a] : 0);
                    }
                    if (!inside) continue;
                    const float dy =
                        static_cast<float>(load_at<T>(DY, (ni * g.m + mi) * g.out[0] * g.out[1] * g.out[2] + o));
                    const float wv =
                        static_cast<float>(load_at<T>(W, (mi * g.kc + cw) * kplane + (kd * g.k[1] + kh) * g.k[2] + kw));
                    acc = fadd(acc, fmul(dy, wv));
                  }
            store_at<T>(DX, at, static_cast<typename T::Compute>(acc));
          }
    }
}

}  // namespace

// Conv3DBackpropInputV2 (hicann/ops-nn conv/conv3d_backprop_input_v2: README.md,
// op_graph/conv3d_backprop_input_v2_proto.h): (input_size: int32 / int64 [5], y's NCDHW dims; filter
// [M, C/groups, KD, KH, KW]; out_backprop [N, M, oD, oH, oW]) -> y [N, C, D, H, W]; attrs strides and
// pads required (5 / 6 values: [1, 1, d, h, w], [front, back, top, bottom, left, right]), dilations
// (1s), groups (1), data_format (default "NDHWC": only "NCDHW" is simulated, so it must be set),
// enable_hf32 (false: not simulated). float16 / float32 / bfloat16, one dtype. The README's Atlas A2/A3
// limits, checked on every SoC: strides h, w in [1, 63] and d in [1, 255]; pads in [0, 255];
// dilations in [1, 255]; filter H, W in [1, 511]; out_backprop's dims >= 1; groups in [1, 65535].
aclError k_conv3d_backprop_input_v2(const OpCall& c, Run* run) {
  const char* op = c.type.c_str();
  if (aclError rc = expect_counts(c, 3, 1)) return rc;
  const OpTensor &f = c.in[1], &dy = c.in[2], &y = c.out[0];
  std::vector<int64_t> size;
  bool known = false;
  if (aclError rc = read_index_list(c, 0, "input 0 (input_size)", true, &size, &known)) return rc;
  if (size.size() != 5)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 0 (input_size) is %s, expected 5 values (NCDHW of y)", op,
                shape_str(size).c_str());
  if (aclError rc = expect_dtype_in(c, "input 1 (filter)", f, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  if (aclError rc = expect_same_dtype(c, "input 2 (out_backprop)", dy, "input 1 (filter)", f)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 1 (filter)", f)) return rc;
  if (aclError rc = expect_5d(c, {{&f, "input 1 (filter)"}, {&dy, "input 2 (out_backprop)"}, {&y, "output 0 (y)"}}))
    return rc;
  if (!c.has_attr("data_format") || c.attr_string("data_format", "") != "NCDHW")
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "%s: attribute data_format is \"%s\", expected \"NCDHW\" (the only layout simulated; the default is "
                "NDHWC)",
                op, c.has_attr("data_format") ? c.attr_string("data_format", "").c_str() : "NDHWC (default)");
  if (c.attr_int("enable_hf32", 0) != 0)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute enable_hf32 (HF32 products) is not simulated", op);
  Geom3 g{};
  g.n = size[0], g.c = size[1], g.m = f.dims[0], g.kc = f.dims[1];
  for (int i = 0; i < 3; ++i) g.in[i] = size[2 + i], g.k[i] = f.dims[2 + i];
  for (int64_t d : size)
    if (d < 1)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input_size %s must have every dim >= 1", op,
                  shape_str(size).c_str());
  for (int64_t d : dy.dims)
    if (d < 1)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 2 (out_backprop) %s must have every dim >= 1 (README)", op,
                  shape_str(dy.dims).c_str());
  if (g.k[1] > 511 || g.k[2] > 511)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 1 (filter) has shape %s: H and W must be in [1, 511]", op,
                shape_str(f.dims).c_str());
  if (aclError rc = read_spatial(c, "strides", true, 255, 63, &g.stride)) return rc;
  if (aclError rc = read_spatial(c, "dilations", false, 255, 255, &g.dilation)) return rc;
  if (!c.has_attr("pads")) return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: required attribute pads is missing", op);
  const std::vector<int64_t> pads = c.attr_list("pads");
  bool pads_ok = pads.size() == 6;
  for (size_t i = 0; pads_ok && i < 6; ++i) pads_ok = pads[i] >= 0 && pads[i] <= 255;
  if (!pads_ok) return attr_fail(c, "pads", pads, "6 values [front, back, top, bottom, left, right] in [0, 255]");
  for (int i = 0; i < 3; ++i) g.front[i] = pads[2 * i], g.back[i] = pads[2 * i + 1];
  if (aclError rc = read_groups(c, "input_size", size, "C", f, &g)) return rc;
  std::vector<int64_t> want_dy{g.n, g.m};
  for (int i = 0; i < 3; ++i) {
    const int64_t extent = g.dilation[i] * (g.k[i] - 1) + 1, padded = g.in[i] + g.front[i] + g.back[i];
    if (padded < extent)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: padded input_size %s is smaller than the dilated filter", op,
                  shape_str(size).c_str());
    g.out[i] = (padded - extent) / g.stride[i] + 1;
    want_dy.push_back(g.out[i]);
  }
  if (dy.dims != want_dy)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "%s: input 2 (out_backprop) has shape %s, expected %s (the forward convolution's output for "
                "input_size %s, filter %s, pads %s)",
                op, shape_str(dy.dims).c_str(), shape_str(want_dy).c_str(), shape_str(size).c_str(),
                shape_str(f.dims).c_str(), shape_str(pads).c_str());
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", size, "input_size")) return rc;
  visit_listed<F32, F16, BF16>(f.dtype, [&](auto t) { *run = [c, g] { conv3d_backprop_input<decltype(t)>(c, g); }; });
  return ACL_SUCCESS;
}

ACLSIM_OPS(conv_3d, {"Conv3DV2", k_conv3d_v2}, {"Conv3DBackpropInputV2", k_conv3d_backprop_input_v2})

}  // namespace aclsim
