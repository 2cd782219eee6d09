// Conv2D (forward) and Conv2DBackpropInput (its input gradient; at the end of the file).
//
// Conv2D, as ORT's CANN EP sends it (nn/conv.cc, ONNX Conv on 4-D input): inputs
// (x, filter, bias, [offset_w]) with x/filter/y descriptors in ACL_FORMAT_NCHW and an omitted
// bias passed as an ACL_DT_UNDEFINED descriptor; attrs strides/dilations (4 entries, in x's
// NCHW order), pads, groups, data_format, offset_x (CANN's Conv2D op definition).
//
// CANN semantics, where they differ from ONNX Conv:
// - pads are [top, bottom, left, right] (ONNX: [top, left, bottom, right]; the EP passes the
//   ONNX list unchanged, which only agrees for pads with top == left and bottom == right);
// - the attribute is `groups`; the EP sets ONNX's `group`, which Conv2D does not read. With
//   groups == 1, CANN's shape inference sets groups = C_in / filter_C ("Attr groups is
//   implicitly changed"), so grouped convolutions still come out right.
//
// Numerics (float32, float16, bfloat16; fp16/bf16 loaded into float32): for each output
// element, acc = 0.0f, then for c over the group's input channels in increasing order, for kh,
// for kw (increasing): acc = acc + x * w, the product and the sum each rounded to float32 (no
// FMA). Padding contributes x = 0 terms (im2col semantics: 0 * inf is NaN). Then
// y = acc + bias in float32 when there is a bias, rounded once to the output dtype.
#include <type_traits>

#include "dtypes.h"
#include "op_call.h"

namespace aclsim {
namespace {

struct ConvGeom {
  int64_t n, c, h, w;      // x
  int64_t m, kc, kh, kw;   // filter [M, C/groups, KH, KW]
  int64_t oh, ow;          // y spatial dims
  int64_t sh, sw, dh, dw;  // strides, dilations
  int64_t pt, pb, pl, pr;  // pads: top, bottom, left, right
  int64_t groups;
  bool bias;
};

const char* format_name(aclFormat f) {
  switch (f) {
    case ACL_FORMAT_NCHW: return "NCHW";
    case ACL_FORMAT_NHWC: return "NHWC";
    case ACL_FORMAT_ND: return "ND";
    case ACL_FORMAT_HWCN: return "HWCN";
    case ACL_FORMAT_UNDEFINED: return "UNDEFINED";
    default: return "other";
  }
}

bool conv_dtype(aclDataType t) { return t == ACL_FLOAT || t == ACL_FLOAT16 || t == ACL_BF16; }

template <typename T>
void conv2d(const OpCall& c, const ConvGeom& g) {
  const auto* X = ptr<T>(c.in[0].data);
  const auto* W = ptr<T>(c.in[1].data);
  const auto* B = g.bias ? ptr<T>(c.in[2].data) : nullptr;
  auto* Y = ptr<T>(c.out[0].data);
  const int64_t m_per_group = g.m / g.groups;
  for (int64_t ni = 0; ni < g.n; ++ni)
    for (int64_t mi = 0; mi < g.m; ++mi) {
      const int64_t c0 = (mi / m_per_group) * g.kc;  // first input channel of this group
      const auto* wm = W + mi * g.kc * g.kh * g.kw;
      auto* ym = Y + (ni * g.m + mi) * g.oh * g.ow;
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          float acc = 0.0f;
          for (int64_t ci = 0; ci < g.kc; ++ci) {
            const auto* xc = X + (ni * g.c + c0 + ci) * g.h * g.w;
            const auto* wc = wm + ci * g.kh * g.kw;
            for (int64_t ky = 0; ky < g.kh; ++ky) {
              const int64_t iy = oy * g.sh - g.pt + ky * g.dh;
              for (int64_t kx = 0; kx < g.kw; ++kx) {
                const int64_t ix = ox * g.sw - g.pl + kx * g.dw;
                const bool inside = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
                const float xv = inside ? static_cast<float>(T::load(xc[iy * g.w + ix])) : 0.0f;
                const float wv = static_cast<float>(T::load(wc[ky * g.kw + kx]));
                const float prod = xv * wv;
                acc = acc + prod;
              }
            }
          }
          if (B != nullptr) acc = acc + static_cast<float>(T::load(B[mi]));
          ym[oy * g.ow + ox] = T::store(static_cast<typename T::Compute>(acc));
        }
    }
}

// A ListInt attribute of 4 entries in NCHW order whose N and C entries are 1.
aclError spatial_pair(const OpCall& c, const char* name, bool required, int64_t min, int64_t* h, int64_t* w) {
  std::vector<int64_t> v = c.attr_list(name);
  if (!c.has_attr(name)) {
    if (required)
      return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: required attribute %s is missing", c.type.c_str(), name);
    *h = *w = 1;
    return ACL_SUCCESS;
  }
  if (v.size() != 4 || v[0] != 1 || v[1] != 1 || v[2] < min || v[3] < min)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "%s: attribute %s is %s, expected 4 values [1, 1, h, w] (NCHW order) with h, w >= %lld", c.type.c_str(),
                name, shape_str(v).c_str(), static_cast<long long>(min));
  *h = v[2];
  *w = v[3];
  return ACL_SUCCESS;
}

// pads: 4 values >= 0, [top, bottom, left, right].
aclError read_pads(const OpCall& c, int64_t* t, int64_t* b, int64_t* l, int64_t* r) {
  if (!c.has_attr("pads"))
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: required attribute pads is missing", c.type.c_str());
  std::vector<int64_t> pads = c.attr_list("pads");
  if (pads.size() != 4 || pads[0] < 0 || pads[1] < 0 || pads[2] < 0 || pads[3] < 0)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "%s: attribute pads is %s, expected 4 values >= 0 [top, bottom, left, right]", c.type.c_str(),
                shape_str(pads).c_str());
  *t = pads[0], *b = pads[1], *l = pads[2], *r = pads[3];
  return ACL_SUCCESS;
}

// Conv2DBackpropInput: dx[n, c, h, w] = sum over m of c's group, then kh, then kw (increasing) of
// dy[n, m, ho, wo] * filter[m, c - group start, kh, kw] where ho = (h + top - kh*dh) / sh and
// wo = (w + left - kw*dw) / sw are integral and inside dy; float32 accumulation from 0 (each
// product and sum rounded, no FMA), one rounding at the end.
template <typename T>
void conv2d_backprop_input(const OpCall& c, const ConvGeom& g) {
  const void* W = c.in[1].data;
  const void* DY = c.in[2].data;
  void* DX = c.out[0].data;
  const int64_t m_per_group = g.m / g.groups;
  for (int64_t ni = 0; ni < g.n; ++ni)
    for (int64_t ci = 0; ci < g.c; ++ci) {
      const int64_t grp = ci / g.kc, cw = ci - grp * g.kc;
      for (int64_t h = 0; h < g.h; ++h)
        for (int64_t w = 0; w < g.w; ++w) {
          float acc = 0.0f;
          for (int64_t mi = grp * m_per_group; mi < (grp + 1) * m_per_group; ++mi)
            for (int64_t ky = 0; ky < g.kh; ++ky) {
              const int64_t ty = h + g.pt - ky * g.dh;
              if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= g.oh) continue;
              for (int64_t kx = 0; kx < g.kw; ++kx) {
                const int64_t tx = w + g.pl - kx * g.dw;
                if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= g.ow) continue;
                const float dy =
                    static_cast<float>(load_at<T>(DY, ((ni * g.m + mi) * g.oh + ty / g.sh) * g.ow + tx / g.sw));
                const float wv = static_cast<float>(load_at<T>(W, ((mi * g.kc + cw) * g.kh + ky) * g.kw + kx));
                acc = fadd(acc, fmul(dy, wv));
              }
            }
          store_at<T>(DX, ((ni * g.c + ci) * g.h + h) * g.w + w, static_cast<typename T::Compute>(acc));
        }
    }
}

struct Named {
  const char* what;
  const OpTensor* t;
};

// Each of `tensors` is 4-D and NCHW (`nd_ok`: or ND, read as NCHW); a wrong shape of output 0 is an
// output error, of the others an input error.
aclError expect_4d_nchw(const OpCall& c, std::initializer_list<Named> tensors, bool nd_ok) {
  for (const Named& e : tensors) {
    if (e.t->format != ACL_FORMAT_NCHW && !(nd_ok && e.t->format == ACL_FORMAT_ND))
      return fail(ACL_ERROR_FORMAT_NOT_MATCH, "%s: %s has format %s; the simulator implements NCHW only",
                  c.type.c_str(), e.what, format_name(e.t->format));
    if (e.t->dims.size() != 4)
      return fail(e.t == &c.out[0] ? ACL_ERROR_OP_OUTPUT_NOT_MATCH : ACL_ERROR_OP_INPUT_NOT_MATCH,
                  "%s: %s has shape %s, expected 4-D NCHW", c.type.c_str(), e.what, shape_str(e.t->dims).c_str());
  }
  return ACL_SUCCESS;
}

}  // namespace

aclError k_conv2d(const OpCall& c, Run* run) {
  if (c.in.size() < 2 || c.in.size() > 4)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "Conv2D: expected 2 to 4 inputs (x, filter, bias, offset_w), got %zu",
                c.in.size());
  if (c.out.size() != 1) return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "Conv2D: expected 1 output, got %zu", c.out.size());
  const OpTensor &x = c.in[0], &f = c.in[1], &y = c.out[0];
  if (x.absent || f.absent)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "Conv2D: input %d (%s) is required", x.absent ? 0 : 1,
                x.absent ? "x" : "filter");
  if (c.in.size() == 4 && !c.in[3].absent)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "Conv2D: input 3 (offset_w, int8 quantisation) is not simulated");
  const bool has_bias = c.in.size() >= 3 && !c.in[2].absent;
  if (!conv_dtype(x.dtype))
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                "Conv2D: input 0 (x) has unsupported dtype %s (simulated: "
                "ACL_FLOAT, ACL_FLOAT16, ACL_BF16)",
                dtype_name(x.dtype));
  if (aclError rc = expect_same_dtype(c, "input 1 (filter)", f, "input 0 (x)", x)) return rc;
  if (has_bias)
    if (aclError rc = expect_same_dtype(c, "input 2 (bias)", c.in[2], "input 0 (x)", x)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  if (aclError rc = expect_4d_nchw(c, {{"input 0 (x)", &x}, {"input 1 (filter)", &f}, {"output 0 (y)", &y}}, false))
    return rc;
  std::string data_format = c.attr_string("data_format", "NCHW");
  if (data_format != "NCHW")
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "Conv2D: attribute data_format is \"%s\", but x is NCHW",
                data_format.c_str());
  if (c.attr_int("offset_x", 0) != 0)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "Conv2D: attribute offset_x (int8 quantisation) must be 0");

  ConvGeom g{};
  g.n = x.dims[0], g.c = x.dims[1], g.h = x.dims[2], g.w = x.dims[3];
  g.m = f.dims[0], g.kc = f.dims[1], g.kh = f.dims[2], g.kw = f.dims[3];
  g.bias = has_bias;
  if (aclError rc = spatial_pair(c, "strides", true, 1, &g.sh, &g.sw)) return rc;
  if (aclError rc = spatial_pair(c, "dilations", false, 1, &g.dh, &g.dw)) return rc;
  if (!c.has_attr("pads")) return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "Conv2D: required attribute pads is missing");
  std::vector<int64_t> pads = c.attr_list("pads");
  if (pads.size() != 4 || pads[0] < 0 || pads[1] < 0 || pads[2] < 0 || pads[3] < 0)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "Conv2D: attribute pads is %s, expected 4 values >= 0 "
                "[top, bottom, left, right]",
                shape_str(pads).c_str());
  g.pt = pads[0], g.pb = pads[1], g.pl = pads[2], g.pr = pads[3];
  g.groups = c.attr_int("groups", 1);
  if (g.groups < 1)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "Conv2D: attribute groups is %lld, expected >= 1",
                static_cast<long long>(g.groups));
  if (g.kc < 1 || g.m < 1 || g.kh < 1 || g.kw < 1)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "Conv2D: input 1 (filter) has shape %s, expected all dims >= 1",
                shape_str(f.dims).c_str());
  if (g.groups == 1 && g.c != g.kc) {  // CANN's InferShape: groups implicitly becomes C_in / filter_C
    if (g.c % g.kc != 0)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                  "Conv2D: x channels (%lld) must be divisible by filter channels "
                  "(%lld) when groups is 1",
                  static_cast<long long>(g.c), static_cast<long long>(g.kc));
    g.groups = g.c / g.kc;
  }
  if (g.c != g.kc * g.groups || g.m % g.groups != 0)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "Conv2D: x %s and filter %s do not fit groups=%lld (need x C = "
                "filter C * groups and filter N divisible by groups)",
                shape_str(x.dims).c_str(), shape_str(f.dims).c_str(), static_cast<long long>(g.groups));
  if (has_bias && (c.in[2].dims.size() != 1 || c.in[2].dims[0] != g.m))
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "Conv2D: input 2 (bias) has shape %s, expected [%lld]",
                shape_str(c.in[2].dims).c_str(), static_cast<long long>(g.m));
  const int64_t eh = g.dh * (g.kh - 1) + 1, ew = g.dw * (g.kw - 1) + 1;  // dilated kernel extent
  const int64_t ph = g.h + g.pt + g.pb, pw = g.w + g.pl + g.pr;
  if (ph < eh || pw < ew)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "Conv2D: padded input %lldx%lld is smaller than the dilated "
                "filter %lldx%lld",
                static_cast<long long>(ph), static_cast<long long>(pw), static_cast<long long>(eh),
                static_cast<long long>(ew));
  g.oh = (ph - eh) / g.sh + 1;
  g.ow = (pw - ew) / g.sw + 1;
  std::vector<int64_t> want{g.n, g.m, g.oh, g.ow};
  if (y.dims != want)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                "Conv2D: output 0 (y) has shape %s, expected %s from pads %s read "
                "as [top, bottom, left, right] (CANN order; ONNX's is [top, left, bottom, right])",
                shape_str(y.dims).c_str(), shape_str(want).c_str(), shape_str(pads).c_str());
  visit_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same<T, F32>::value || std::is_same<T, F16>::value || std::is_same<T, BF16>::value)
      *run = [c, g] { conv2d<T>(c, g); };
  });
  return ACL_SUCCESS;
}

// Conv2DBackpropInput(input_size: const int32 [4] = NCHW dims of y, filter [M, C/groups, kh, kw],
// out_backprop [N, M, Ho, Wo]) -> y [N, C, H, W] (mindspore-ai/graphengine@cd75e149
// 910/third_party/fwkacllib/inc/ops/nn_calculation_ops.h:470). Attrs strides [1, 1, sh, sw] and
// pads [top, bottom, left, right] (required), dilations [1, 1, dh, dw], groups (1), data_format
// (GE default "NHWC": only "NCHW" is simulated, so it must be set). Descriptors NCHW or ND.
aclError k_conv2d_backprop_input(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 3, 1)) return rc;
  const OpTensor &f = c.in[1], &dy = c.in[2], &y = c.out[0];
  std::vector<int64_t> size;
  bool known;
  if (aclError rc = read_index_list(c, 0, "input 0 (input_size)", true, &size, &known)) return rc;
  if (c.in[0].dtype != ACL_INT32)
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE,
                "Conv2DBackpropInput: input 0 (input_size) has dtype %s, expected ACL_INT32",
                dtype_name(c.in[0].dtype));
  if (size.size() != 4)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "Conv2DBackpropInput: input 0 (input_size) is %s, expected 4 values (NCHW of y)",
                shape_str(size).c_str());
  if (aclError rc = expect_dtype_in(c, "input 1 (filter)", f, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  if (aclError rc = expect_same_dtype(c, "input 2 (out_backprop)", dy, "input 1 (filter)", f)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 1 (filter)", f)) return rc;
  if (aclError rc =
          expect_4d_nchw(c, {{"input 1 (filter)", &f}, {"input 2 (out_backprop)", &dy}, {"output 0 (y)", &y}}, true))
    return rc;
  if (!c.has_attr("data_format") || c.attr_string("data_format", "") != "NCHW")
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "Conv2DBackpropInput: attribute data_format is \"%s\", expected \"NCHW\" (the only layout simulated; "
                "the default is NHWC)",
                c.has_attr("data_format") ? c.attr_string("data_format", "").c_str() : "NHWC (default)");
  ConvGeom g{};
  g.n = size[0], g.c = size[1], g.h = size[2], g.w = size[3];
  g.m = f.dims[0], g.kc = f.dims[1], g.kh = f.dims[2], g.kw = f.dims[3];
  if (aclError rc = spatial_pair(c, "strides", true, 1, &g.sh, &g.sw)) return rc;
  if (aclError rc = spatial_pair(c, "dilations", false, 1, &g.dh, &g.dw)) return rc;
  if (aclError rc = read_pads(c, &g.pt, &g.pb, &g.pl, &g.pr)) return rc;
  g.groups = c.attr_int("groups", 1);
  if (g.groups < 1)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "Conv2DBackpropInput: attribute groups is %lld, expected >= 1",
                static_cast<long long>(g.groups));
  if (g.n < 1 || g.c < 1 || g.h < 1 || g.w < 1 || g.m < 1 || g.kc < 1 || g.kh < 1 || g.kw < 1)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "Conv2DBackpropInput: input_size %s and filter %s must have every dim >= 1", shape_str(size).c_str(),
                shape_str(f.dims).c_str());
  if (g.c != g.kc * g.groups || g.m % g.groups != 0)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "Conv2DBackpropInput: input_size %s and filter %s do not fit groups=%lld (need C = filter C * groups "
                "and filter N divisible by groups)",
                shape_str(size).c_str(), shape_str(f.dims).c_str(), static_cast<long long>(g.groups));
  const int64_t eh = g.dh * (g.kh - 1) + 1, ew = g.dw * (g.kw - 1) + 1;
  const int64_t ph = g.h + g.pt + g.pb, pw = g.w + g.pl + g.pr;
  if (ph < eh || pw < ew)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "Conv2DBackpropInput: padded input %lldx%lld is smaller than the dilated filter %lldx%lld",
                static_cast<long long>(ph), static_cast<long long>(pw), static_cast<long long>(eh),
                static_cast<long long>(ew));
  g.oh = (ph - eh) / g.sh + 1;
  g.ow = (pw - ew) / g.sw + 1;
  const std::vector<int64_t> want_dy{g.n, g.m, g.oh, g.ow};
  if (dy.dims != want_dy)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "Conv2DBackpropInput: input 2 (out_backprop) has shape %s, expected %s: Ho = (H + top + bottom - "
                "(dh*(kh-1)+1)) / sh + 1 for input_size %s, filter %s, pads [top, bottom, left, right]",
                shape_str(dy.dims).c_str(), shape_str(want_dy).c_str(), shape_str(size).c_str(),
                shape_str(f.dims).c_str());
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", size, "input_size")) return rc;
  visit_listed<F32, F16, BF16>(f.dtype, [&](auto t) { *run = [c, g] { conv2d_backprop_input<decltype(t)>(c, g); }; });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(conv, {"Conv2D", k_conv2d}, {"Conv2DBackpropInput", k_conv2d_backprop_input})

}  // namespace aclsim
