// Max pooling on NCHW: MaxPoolV3 (forward) and MaxPoolGrad (TF-style backward from the forward
// input). MaxPoolV3's own kernel (hicann/ops-nn pooling/max_pool_v3/op_kernel/arch35/
// max_pool_v3_common.h, MaxPoolImpl) folds the window with the vector Max from -inf; how that
// instruction treats NaN and +-0.0 is undocumented (asc-devkit docs/api/.../reg_vector/asc_max.md),
// so both ops pick a window's maximum the way CANN's MaxPoolGrad kernel does
// (hicann/ops-nn@e5c3fa93 pooling/max_pool_grad/op_kernel/arch35/max_pool_grad_simt.h:40-47,
// 129-141): scanning the window row by row from its first in-image position, a value replaces the
// running maximum (initially -inf) when it is larger or NaN. So the first maximum wins ties (-0.0
// before +0.0 stays first), a window holding NaN selects its last NaN, padded positions never take
// part. MaxPoolV3 copies the selected element (bit-exact, any NaN payload kept); MaxPoolGrad adds
// each grad value, in float32 from +0.0 and in row-major output order, to its window's selected
// position and rounds once (max_pool_grad_simt.h:237-246).
//
// Output sizes and pads: hicann/ops-nn@e5c3fa93 pooling/max_pool_v3/op_host/max_pool_v3_infershape.cpp:51-86
// and op_host/arch35/max_pool_v3_tiling_base.cpp:283-331 (CALCULATED pads must be in [0, kernel));
// pooling/max_pool_grad/op_host/arch35/max_pool_grad_tiling_base.cpp:333-390 and
// pooling/pool_grad_common/op_host/arch35/max_pool_grad_with_argmax_tiling_common.h:97-106.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "dtypes.h"
#include "op_call.h"
#include "ops/window_max.h"

namespace aclsim {
namespace {

struct PoolGeom {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t kh = 1, kw = 1, sh = 1, sw = 1;
  int64_t pt = 0, pb = 0, pl = 0, pr = 0;  // pads (only top/left place the windows)
  int64_t oh = 0, ow = 0;
};

const char* format_str(aclFormat f) {
  switch (f) {
    case ACL_FORMAT_NCHW: return "NCHW";
    case ACL_FORMAT_NHWC: return "NHWC";
    case ACL_FORMAT_ND: return "ND";
    default: return "other";
  }
}

aclError expect_nchw(const OpCall& c, const char* what, const OpTensor& t, bool output) {
  if (t.format != ACL_FORMAT_NCHW && t.format != ACL_FORMAT_ND)
    return fail(ACL_ERROR_FORMAT_NOT_MATCH, "%s: %s has format %s; the simulator implements NCHW only", c.type.c_str(),
                what, format_str(t.format));
  if (t.dims.size() != 4)
    return fail(output ? ACL_ERROR_OP_OUTPUT_NOT_MATCH : ACL_ERROR_OP_INPUT_NOT_MATCH,
                "%s: %s has shape %s, expected 4-D NCHW", c.type.c_str(), what, shape_str(t.dims).c_str());
  return ACL_SUCCESS;
}

// ksize / strides: required, [1, 1, h, w] with h, w >= 1.
aclError window_attr(const OpCall& c, const char* name, int64_t* h, int64_t* w) {
  if (!c.has_attr(name))
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: required attribute %s is missing", c.type.c_str(), name);
  std::vector<int64_t> v = c.attr_list(name);
  if (v.size() != 4 || v[0] != 1 || v[1] != 1 || v[2] < 1 || v[3] < 1)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "%s: attribute %s is %s, expected 4 values [1, 1, h, w] (NCHW order) with h, w >= 1", c.type.c_str(),
                name, shape_str(v).c_str());
  *h = v[2];
  *w = v[3];
  return ACL_SUCCESS;
}

aclError expect_nchw_layout_attr(const OpCall& c, const char* default_format) {
  const std::string f = c.attr_string("data_format", default_format);
  if (f == "NCHW") return ACL_SUCCESS;
  return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute data_format is \"%s\"%s; the simulator implements NCHW only",
              c.type.c_str(), f.c_str(), c.has_attr("data_format") ? "" : " (the default)");
}

// Floor division (rounds toward -inf).
int64_t div_floor(int64_t x, int64_t y) {
  int64_t q = x / y;
  if (x % y != 0 && ((x < 0) != (y < 0))) --q;
  return q;
}

// The element index in x (p * H * W + h * W + w) of the selected maximum of plane p's window
// (oy, ox), or -1 if the window has no in-image position.
template <typename T>
int64_t window_argmax(const void* x, const PoolGeom& g, int64_t p, int64_t oy, int64_t ox) {
  const int64_t hs = oy * g.sh - g.pt, ws = ox * g.sw - g.pl;
  const int64_t he = std::min(hs + g.kh, g.h), we = std::min(ws + g.kw, g.w);
  const int64_t h0 = std::max<int64_t>(hs, 0), w0 = std::max<int64_t>(ws, 0);
  if (h0 >= he || w0 >= we) return -1;
  using V = typename T::Compute;        // float for the 16-bit types, double for double: compared exactly
  const int64_t plane = p * g.h * g.w;  // the plane's first element
  V best = -std::numeric_limits<V>::infinity();
  int64_t arg = plane + h0 * g.w + w0;
  for (int64_t h = h0; h < he; ++h)
    for (int64_t w = w0; w < we; ++w) {
      const int64_t at = plane + h * g.w + w;
      const V v = load_at<T>(x, at);
      if (v > best || v != v) {
        best = v;
        arg = at;
      }
    }
  return arg;
}

template <typename T>
void max_pool(const OpCall& c, const PoolGeom& g) {
  int64_t o = 0;
  for (int64_t p = 0; p < g.n * g.c; ++p)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) store_window_max<T>(c, o++, window_argmax<T>(c.in[0].data, g, p, oy, ox));
}

template <typename T>
void max_pool_grad(const OpCall& c, const PoolGeom& g) {
  const void* grad = c.in[2].data;
  const int64_t plane = g.h * g.w, out_plane = g.oh * g.ow;
  std::vector<float> acc(static_cast<size_t>(g.n * g.c * plane), 0.0f);
  for (int64_t p = 0; p < g.n * g.c; ++p)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const int64_t arg = window_argmax<T>(c.in[0].data, g, p, oy, ox);
        if (arg < 0) continue;
        float& a = acc[static_cast<size_t>(arg)];
        a = fadd(a, static_cast<float>(load_at<T>(grad, p * out_plane + oy * g.ow + ox)));
      }
  for (size_t i = 0; i < acc.size(); ++i)
    store_at<T>(c.out[0].data, static_cast<int64_t>(i), static_cast<typename T::Compute>(acc[i]));
}

aclError pool_dtype(const OpCall& c, const char* what, const OpTensor& t) {
  return expect_dtype_in(c, what, t, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16});
}

// MaxPoolV3 also takes double: its prototype (hicann/ops-nn@1222edf2
// pooling/max_pool_v3/op_graph/max_pool_v3_proto.h, REG_OP(MaxPoolV3) INPUT x) lists DT_DOUBLE
// beside DT_FLOAT16/DT_BF16/DT_FLOAT32 (its integer types are not simulated).
aclError max_pool_v3_dtype(const OpCall& c, const char* what, const OpTensor& t) {
  return expect_dtype_in(c, what, t, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE});
}

}  // namespace

// MaxPoolV3(x [N, C, H, W]; ksize, strides [1, 1, h, w] required; padding_mode "CALCULATED"
// (pads [top, bottom, left, right], each in [0, kernel)) / "SAME" / "VALID"; data_format "NCHW";
// global_pooling; ceil_mode) -> y.
aclError k_max_pool_v3(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 1, 1)) return rc;
  const OpTensor &x = c.in[0], &y = c.out[0];
  if (aclError rc = max_pool_v3_dtype(c, "input 0 (x)", x)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  if (aclError rc = expect_nchw(c, "input 0 (x)", x, false)) return rc;
  if (aclError rc = expect_nchw(c, "output 0 (y)", y, true)) return rc;
  if (aclError rc = expect_nchw_layout_attr(c, "NCHW")) return rc;
  PoolGeom g;
  g.n = x.dims[0], g.c = x.dims[1], g.h = x.dims[2], g.w = x.dims[3];
  if (aclError rc = window_attr(c, "ksize", &g.kh, &g.kw)) return rc;
  if (aclError rc = window_attr(c, "strides", &g.sh, &g.sw)) return rc;
  const std::string mode = c.attr_string("padding_mode", "CALCULATED");
  const bool ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  if (c.attr_int("global_pooling", 0) != 0) {
    g.kh = g.h, g.kw = g.w, g.oh = 1, g.ow = 1;  // the whole plane; ksize, strides and pads ignored
  } else if (mode == "CALCULATED") {
    std::vector<int64_t> pads = c.has_attr("pads") ? c.attr_list("pads") : std::vector<int64_t>{0, 0, 0, 0};
    if (pads.size() != 4 || pads[0] < 0 || pads[1] < 0 || pads[2] < 0 || pads[3] < 0 || pads[0] >= g.kh ||
        pads[1] >= g.kh || pads[2] >= g.kw || pads[3] >= g.kw)
      return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                  "MaxPoolV3: attribute pads is %s, expected 4 values [top, bottom, left, right], each >= 0 and "
                  "smaller than the kernel (%lldx%lld)",
                  shape_str(pads).c_str(), static_cast<long long>(g.kh), static_cast<long long>(g.kw));
    g.pt = pads[0], g.pb = pads[1], g.pl = pads[2], g.pr = pads[3];
    auto out = [ceil_mode](int64_t size, int64_t k, int64_t lo, int64_t hi, int64_t s) {
      int64_t o = div_floor(size + lo + hi - k + (ceil_mode ? s - 1 : 0), s) + 1;
      if (ceil_mode && (o - 1) * s >= size + lo) --o;  // the last window must start inside
      return o;
    };
    g.oh = out(g.h, g.kh, g.pt, g.pb, g.sh);
    g.ow = out(g.w, g.kw, g.pl, g.pr, g.sw);
  } else if (mode == "VALID") {
    g.oh = div_floor(g.h - g.kh + g.sh, g.sh);
    g.ow = div_floor(g.w - g.kw + g.sw, g.sw);
  } else if (mode == "SAME") {
    g.oh = (g.h + g.sh - 1) / g.sh;
    g.ow = (g.w + g.sw - 1) / g.sw;
    const int64_t nh = std::max<int64_t>(0, (g.oh - 1) * g.sh + g.kh - g.h);
    const int64_t nw = std::max<int64_t>(0, (g.ow - 1) * g.sw + g.kw - g.w);
    g.pt = nh / 2, g.pb = nh - g.pt, g.pl = nw / 2, g.pr = nw - g.pl;
  } else {
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "MaxPoolV3: attribute padding_mode is \"%s\", expected \"CALCULATED\", \"SAME\" or \"VALID\"",
                mode.c_str());
  }
  if (g.h < 1 || g.w < 1 || g.oh < 1 || g.ow < 1) return no_output_window(c, x, g.kh, g.kw, g.sh, g.sw, mode);
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", {g.n, g.c, g.oh, g.ow}, "pooled x")) return rc;
  visit_listed<F32, F16, F64, BF16>(x.dtype, [&](auto t) { *run = [c, g] { max_pool<decltype(t)>(c, g); }; });
  return ACL_SUCCESS;
}

// MaxPoolGrad(x1 = forward input [N, C, H, W], x2 = forward output, grad [N, C, Ho, Wo]; ksize,
// strides [1, 1, h, w], padding "VALID" / "SAME" (required), data_format (default "NHWC": must be
// "NCHW")) -> y (shape of x1). x2 only has to have grad's shape: the maxima are found again in x1.
aclError k_max_pool_grad(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 3, 1)) return rc;
  const OpTensor &x1 = c.in[0], &x2 = c.in[1], &grad = c.in[2], &y = c.out[0];
  if (aclError rc = pool_dtype(c, "input 0 (x1)", x1)) return rc;
  if (aclError rc = expect_same_dtype(c, "input 1 (x2)", x2, "input 0 (x1)", x1)) return rc;
  if (aclError rc = expect_same_dtype(c, "input 2 (grad)", grad, "input 0 (x1)", x1)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (x1)", x1)) return rc;
  if (aclError rc = expect_nchw(c, "input 0 (x1)", x1, false)) return rc;
  if (aclError rc = expect_nchw(c, "input 1 (x2)", x2, false)) return rc;
  if (aclError rc = expect_nchw(c, "input 2 (grad)", grad, false)) return rc;
  if (aclError rc = expect_nchw(c, "output 0 (y)", y, true)) return rc;
  if (aclError rc = expect_nchw_layout_attr(c, "NHWC")) return rc;
  PoolGeom g;
  g.n = x1.dims[0], g.c = x1.dims[1], g.h = x1.dims[2], g.w = x1.dims[3];
  if (g.n < 1 || g.c < 1 || g.h < 1 || g.w < 1)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "MaxPoolGrad: input 0 (x1) has shape %s, expected every dim >= 1",
                shape_str(x1.dims).c_str());
  if (aclError rc = window_attr(c, "ksize", &g.kh, &g.kw)) return rc;
  if (aclError rc = window_attr(c, "strides", &g.sh, &g.sw)) return rc;
  if (!c.has_attr("padding"))
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "MaxPoolGrad: required attribute padding (\"VALID\" or \"SAME\") is missing");
  const std::string padding = c.attr_string("padding", "");
  if (padding == "VALID") {
    g.oh = div_floor(g.h - g.kh + g.sh, g.sh);
    g.ow = div_floor(g.w - g.kw + g.sw, g.sw);
  } else if (padding == "SAME") {
    g.oh = (g.h + g.sh - 1) / g.sh;
    g.ow = (g.w + g.sw - 1) / g.sw;
    g.pt = std::max<int64_t>(0, (g.oh - 1) * g.sh + g.kh - g.h) / 2;
    g.pl = std::max<int64_t>(0, (g.ow - 1) * g.sw + g.kw - g.w) / 2;
  } else {
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "MaxPoolGrad: attribute padding is \"%s\", expected \"VALID\" or \"SAME\"",
                padding.c_str());
  }
  const std::vector<int64_t> want{g.n, g.c, g.oh, g.ow};
  if (g.oh < 1 || g.ow < 1 || grad.dims != want)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "MaxPoolGrad: input 2 (grad) has shape %s, expected %s (x1 %s pooled with kernel %lldx%lld, stride "
                "%lldx%lld, %s)",
                shape_str(grad.dims).c_str(), shape_str(want).c_str(), shape_str(x1.dims).c_str(),
                static_cast<long long>(g.kh), static_cast<long long>(g.kw), static_cast<long long>(g.sh),
                static_cast<long long>(g.sw), padding.c_str());
  if (aclError rc = expect_same_shape(c, "input 1 (x2)", x2, "input 2 (grad)", grad)) return rc;
  if (aclError rc = expect_same_shape(c, "output 0 (y)", y, "input 0 (x1)", x1)) return rc;
  visit_listed<F32, F16, BF16>(x1.dtype, [&](auto t) { *run = [c, g] { max_pool_grad<decltype(t)>(c, g); }; });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(pooling, {"MaxPoolV3", k_max_pool_v3}, {"MaxPoolGrad", k_max_pool_grad})

}  // namespace aclsim
