// AvgPoolV2 on NCHW: each output element is the sum of its window's in-image elements (row by row,
// from +0, in float32; float64 in double) divided by the divisor: divisor_override when set, else the
// window's in-image element count (exclusive = true, the default) or its element count within the
// padded image (exclusive = false: padding counts).
//
// Spec: hicann/ops-nn pooling/avg_pool_v2/op_graph/avg_pool_v2_proto.h (REG_OP(AvgPoolV2): x float16 /
// float32 / bfloat16 / double [N, C, H, W]; ksize, strides required, 4 values with N = C = 1, ksize H,
// W in [1, 255] and ksize_H * ksize_W < 256, strides H, W in [1, 63]; padding_mode "CALCULATED" (pads)
// / "SAME" / "VALID"; pads [top, bottom, left, right]; data_format "NCHW"; global_pooling: "pads will
// change to {0,0,0,0} and ksize will change to [input_h, input_w]"; ceil_mode; exclusive: "Ignore
// padding area or not when calculating average"; divisor_override in [1, 255], 0 = none) and
// pooling/avg_pool_v2/op_host/avg_pool_v2_infershape.cpp (pads order, 4-D x, the output sizes:
// CALCULATED (H + top + bottom - k) / s + 1, with ceil_mode rounded up and dropped by one when the
// last window would start past H + top; SAME ceil(H / s) with TF's split of the needed padding,
// top = needed / 2; VALID (H - k + s) / s). A window with no in-image element (exclusive) divides
// by 0: the spec leaves the result undefined ("0, 65504, Nan, and INF"); the simulator gives 0 / 0.
// The division is one IEEE division per element (CANN's kernel may multiply by a reciprocal:
// compare AvgPoolV2 results within tolerance).
//
// Sent by the CANN EP's nn/average_pool.cc for AveragePool (ksize/strides [1, 1, kh, kw], pads in
// ONNX's order, exclusive = count_include_pad) and GlobalAveragePool (global_pooling, "VALID").
#include <algorithm>

#include "dtypes.h"
#include "numerics.h"
#include "op_call.h"

namespace aclsim {
namespace {

constexpr int64_t kMaxKsize = 255;      // ksize H, W in [1, 255]
constexpr int64_t kMaxKsizeArea = 256;  // ksize_H * ksize_W < 256
constexpr int64_t kMaxStride = 63;      // strides H, W in [1, 63]
constexpr int64_t kMaxDivisor = 255;    // divisor_override in [1, 255]

struct AvgGeom {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1;
  int64_t pt = 0, pb = 0, pl = 0, pr = 0;
  int64_t oh = 0, ow = 0;
  bool exclusive = true;
  int64_t divisor = 0;  // divisor_override (0: none)
};

// Floor division (rounds toward -inf).
int64_t floor_div(int64_t x, int64_t y) {
  int64_t q = x / y;
  if (x % y != 0 && ((x < 0) != (y < 0))) --q;
  return q;
}

// ksize / strides: 4 values [1, 1, h, w] with 1 <= h, w <= `max`.
aclError window_attr(const OpCall& c, const char* name, int64_t max, int64_t* h, int64_t* w) {
  if (!c.has_attr(name)) return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "AvgPoolV2: required attribute %s is missing", name);
  const std::vector<int64_t> v = c.attr_list(name);
  if (v.size() != 4 || v[0] != 1 || v[1] != 1 || v[2] < 1 || v[3] < 1 || v[2] > max || v[3] > max)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "AvgPoolV2: attribute %s is %s, expected 4 values [1, 1, h, w] (NCHW order) with h, w in [1, %lld]",
                name, shape_str(v).c_str(), static_cast<long long>(max));
  *h = v[2];
  *w = v[3];
  return ACL_SUCCESS;
}

template <typename T>
void avg_pool(const OpCall& c, const AvgGeom& g) {
  using Acc = typename std::conditional<std::is_same<T, F64>::value, double, float>::type;
  const void* x = c.in[0].data;
  void* y = c.out[0].data;
  for (int64_t p = 0; p < g.n * g.c; ++p)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const int64_t hs = oy * g.sh - g.pt, ws = ox * g.sw - g.pl;
        const int64_t h0 = std::max<int64_t>(hs, 0), w0 = std::max<int64_t>(ws, 0);
        const int64_t h1 = std::min(hs + g.kh, g.h), w1 = std::min(ws + g.kw, g.w);
        Acc sum = 0;
        for (int64_t iy = h0; iy < h1; ++iy)
          for (int64_t ix = w0; ix < w1; ++ix) {
            const Acc v = static_cast<Acc>(load_at<T>(x, (p * g.h + iy) * g.w + ix));
            sum = std::is_same<Acc, float>::value
                      ? static_cast<Acc>(fadd(static_cast<float>(sum), static_cast<float>(v)))
                      : sum + v;
          }
        int64_t count;
        if (g.divisor > 0) {
          count = g.divisor;
        } else if (g.exclusive) {
          count = std::max<int64_t>(h1 - h0, 0) * std::max<int64_t>(w1 - w0, 0);
        } else {  // the window clipped to the padded image
          const int64_t ph = std::min(hs + g.kh, g.h + g.pb) - hs, pw = std::min(ws + g.kw, g.w + g.pr) - ws;
          count = ph * pw;
        }
        const Acc out = std::is_same<Acc, float>::value
                            ? static_cast<Acc>(fdiv(static_cast<float>(sum), static_cast<float>(count)))
                            : sum / static_cast<Acc>(count);
        store_at<T>(y, (p * g.oh + oy) * g.ow + ox, static_cast<typename T::Compute>(out));
      }
}

}  // namespace

// AvgPoolV2(x [N, C, H, W]; ksize, strides, padding_mode, pads, data_format, global_pooling, ceil_mode,
// exclusive, divisor_override) -> y [N, C, Ho, Wo].
aclError k_avg_pool_v2(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 1, 1)) return rc;
  const OpTensor &x = c.in[0], &y = c.out[0];
  if (aclError rc = expect_dtype_in(c, "input 0 (x)", x, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE})) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  for (const OpTensor* t : {&x, &y}) {
    const char* what = t == &x ? "input 0 (x)" : "output 0 (y)";
    if (t->format != ACL_FORMAT_NCHW && t->format != ACL_FORMAT_ND)
      return fail(ACL_ERROR_FORMAT_NOT_MATCH, "AvgPoolV2: %s has format %d; the simulator implements NCHW (or ND) only",
                  what, static_cast<int>(t->format));
    if (t->dims.size() != 4)
      return fail(t == &x ? ACL_ERROR_OP_INPUT_NOT_MATCH : ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                  "AvgPoolV2: %s has shape %s, expected 4-D NCHW", what, shape_str(t->dims).c_str());
  }
  const std::string layout = c.attr_string("data_format", "NCHW");
  if (layout != "NCHW")
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "AvgPoolV2: attribute data_format is \"%s\"; the simulator implements NCHW only", layout.c_str());
  AvgGeom g;
  g.n = x.dims[0], g.c = x.dims[1], g.h = x.dims[2], g.w = x.dims[3];
  if (g.c < 1 || g.h < 1 || g.w < 1)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "AvgPoolV2: input 0 (x) has shape %s, expected C, H, W >= 1",
                shape_str(x.dims).c_str());
  g.exclusive = c.attr_int("exclusive", 1) != 0;
  g.divisor = c.attr_int("divisor_override", 0);
  if (g.divisor < 0 || g.divisor > kMaxDivisor)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "AvgPoolV2: attribute divisor_override is %lld, expected 0 (none) or a "
                "value in [1, %lld]",
                static_cast<long long>(g.divisor), static_cast<long long>(kMaxDivisor));
  const std::string mode = c.attr_string("padding_mode", "CALCULATED");
  const bool ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  if (c.attr_int("global_pooling", 0) != 0) {  // ksize, strides and pads are ignored
    g.kh = g.h, g.kw = g.w, g.sh = g.h, g.sw = g.w, g.oh = 1, g.ow = 1;
  } else {
    if (aclError rc = window_attr(c, "ksize", kMaxKsize, &g.kh, &g.kw)) return rc;
    if (aclError rc = window_attr(c, "strides", kMaxStride, &g.sh, &g.sw)) return rc;
    if (g.kh * g.kw >= kMaxKsizeArea)
      return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "AvgPoolV2: ksize %lldx%lld has %lld elements, expected fewer than %lld",
                  static_cast<long long>(g.kh), static_cast<long long>(g.kw), static_cast<long long>(g.kh * g.kw),
                  static_cast<long long>(kMaxKsizeArea));
    const std::vector<int64_t> pads = c.has_attr("pads") ? c.attr_list("pads") : std::vector<int64_t>{0, 0, 0, 0};
    if (pads.size() != 4 || *std::min_element(pads.begin(), pads.end()) < 0)
      return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                  "AvgPoolV2: attribute pads is %s, expected 4 values [top, bottom, left, right], each >= 0",
                  shape_str(pads).c_str());
    if (mode == "CALCULATED" || mode == "VALID") {
      if (mode == "CALCULATED") g.pt = pads[0], g.pb = pads[1], g.pl = pads[2], g.pr = pads[3];
      auto out = [&](int64_t size, int64_t k, int64_t lo, int64_t hi, int64_t s) {
        if (mode == "VALID" && !ceil_mode) return floor_div(size - k + s, s);
        int64_t o = floor_div(size + lo + hi - k + (ceil_mode ? s - 1 : 0), s) + 1;
        if (ceil_mode && mode == "CALCULATED" && (o - 1) * s >= size + lo) --o;  // the last window starts inside
        return o;
      };
      // VALID with ceil_mode reads the pads too (avg_pool_v2_infershape.cpp); they place no window.
      g.oh = out(g.h, g.kh, mode == "VALID" ? pads[0] : g.pt, mode == "VALID" ? pads[1] : g.pb, g.sh);
      g.ow = out(g.w, g.kw, mode == "VALID" ? pads[2] : g.pl, mode == "VALID" ? pads[3] : g.pr, g.sw);
    } else if (mode == "SAME") {
      g.oh = (g.h + g.sh - 1) / g.sh;
      g.ow = (g.w + g.sw - 1) / g.sw;
      const int64_t nh = (g.oh - 1) * g.sh + g.kh - g.h, nw = (g.ow - 1) * g.sw + g.kw - g.w;
      if (nh < 0 || nw < 0)
        return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                    "AvgPoolV2: padding_mode SAME needs padding %lld x %lld (kernel %lldx%lld, stride %lldx%lld); "
                    "computed pad values must be >= 0",
                    static_cast<long long>(nh), static_cast<long long>(nw), static_cast<long long>(g.kh),
                    static_cast<long long>(g.kw), static_cast<long long>(g.sh), static_cast<long long>(g.sw));
      g.pt = nh / 2, g.pb = nh - g.pt, g.pl = nw / 2, g.pr = nw - g.pl;
    } else {
      return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                  "AvgPoolV2: attribute padding_mode is \"%s\", expected \"CALCULATED\", \"SAME\" or \"VALID\"",
                  mode.c_str());
    }
  }
  if (g.oh < 1 || g.ow < 1) return no_output_window(c, x, g.kh, g.kw, g.sh, g.sw, mode);
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", {g.n, g.c, g.oh, g.ow}, "pooled x")) return rc;
  visit_listed<F32, F16, BF16, F64>(x.dtype, [&](auto t) { *run = [c, g] { avg_pool<decltype(t)>(c, g); }; });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(avg_pool, {"AvgPoolV2", k_avg_pool_v2})

}  // namespace aclsim
