// MaxPool3DWithArgmaxV2 (hicann/ops-nn pooling/max_pool3d_with_argmax_v2: README.md,
// op_graph/max_pool3d_with_argmax_v2_proto.h, docs/aclnnMaxPool3dWithArgmax.md, tests/assets/golden.py):
// x [N, C, D, H, W] (float32, float16, bfloat16) -> y (x's dtype) and argmax (int32; int64 with
// dtype 9, Ascend 950 only), both [N, C, oD, oH, oW].
//
// Attributes (proto): ksize, strides, pads required, 3 values each ([d, h, w]); pads symmetric,
// 0 <= pads[i] <= ksize[i] / 2; dilation (3 values, default 1s); ceil_mode (false); data_format
// ("NCDHW"; the one simulated, and Atlas A2/A3's only one); dtype (3 = int32, 9 = int64). On Atlas
// A2/A3 (aclnn doc): dilation 1 only, argmax int32 only, D * H * W at most INT32_MAX.
// Output extent (README): (in + 2 pad - dilation (k - 1) - 1) / stride + 1, rounded up with
// ceil_mode, where a last window wholly in the right padding is dropped (aclnn doc, 约束说明).
//
// Semantics (the golden is torch.nn.MaxPool3d(return_indices=True)): y is the window's maximum,
// copied bit-exact, and argmax its index in its (n, c) plane, d * H * W + h * W + w; padding never
// takes part; the first maximum wins ties and a window of NaNs gives its last NaN
// (pool_3d.h window_argmax, MaxPool3D's rule).
#include <limits>

#include "dtypes.h"
#include "internal.h"
#include "op_call.h"
#include "ops/pool_3d.h"
#include "ops/window_max.h"

namespace aclsim {
namespace {

// ksize / strides / pads / dilation: 3 values, each >= `min`.
aclError triple(const OpCall& c, const char* name, bool required, int64_t fallback, int64_t min, int64_t* values) {
  if (!c.has_attr(name)) {
    if (required)
      return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: required attribute %s is missing", c.type.c_str(), name);
    for (int a = 0; a < kAxes; ++a) values[a] = fallback;
    return ACL_SUCCESS;
  }
  const std::vector<int64_t> v = c.attr_list(name);
  bool ok = v.size() == 3;
  for (size_t i = 0; ok && i < 3; ++i) ok = v[i] >= min;
  if (!ok)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute %s is %s, expected 3 values [d, h, w], each >= %lld",
                c.type.c_str(), name, shape_str(v).c_str(), static_cast<long long>(min));
  for (int a = 0; a < kAxes; ++a) values[a] = v[static_cast<size_t>(a)];
  return ACL_SUCCESS;
}

template <typename T, typename I>
void max_pool_with_argmax(const OpCall& c, const PoolGeom3& g) {
  auto* argmax = static_cast<I*>(c.out[1].data);
  const int64_t plane = g.in[0] * g.in[1] * g.in[2];
  int64_t o = 0;
  for_each_window(g, [&](int64_t p, const int64_t* start) {
    const int64_t arg = window_argmax<T>(c.in[0].data, g, p, start);
    store_window_max<T>(c, o, arg);
    argmax[o++] = arg < 0 ? 0 : static_cast<I>(arg - p * plane);  // arg < 0 only with dilation (Ascend 950)
  });
}

}  // namespace

aclError k_max_pool3d_with_argmax_v2(const OpCall& c, Run* run) {
  const char* op = c.type.c_str();
  if (aclError rc = expect_x_to_y(c, 1, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}, /*n_out=*/2)) return rc;
  if (aclError rc = expect_ncdhw_x(c, "NCDHW")) return rc;
  const OpTensor &x = c.in[0], &argmax = c.out[1];
  const std::string family = soc_family();
  const bool a2_a3 = family == "ascend910b" || family == "ascend910_93";
  const int64_t dtype = c.attr_int("dtype", 3);
  if (dtype != 3 && dtype != 9)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute dtype is %lld, expected 3 (int32) or 9 (int64)", op,
                static_cast<long long>(dtype));
  if (dtype == 9 && a2_a3)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: an int64 argmax (dtype 9) is not supported on %s (aclnn doc)", op,
                family.c_str());
  const aclDataType index_type = dtype == 9 ? ACL_INT64 : ACL_INT32;
  if (argmax.dtype != index_type)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "%s: output 1 (argmax) has dtype %s, expected %s (attribute dtype %lld)",
                op, dtype_name(argmax.dtype), dtype_name(index_type), static_cast<long long>(dtype));
  PoolGeom3 g;
  view_as_planes(x, &g);
  if (aclError rc = triple(c, "ksize", true, 1, 1, g.k)) return rc;
  if (aclError rc = triple(c, "strides", true, 1, 1, g.s)) return rc;
  if (aclError rc = triple(c, "pads", true, 0, 0, g.pad)) return rc;
  if (aclError rc = triple(c, "dilation", false, 1, 1, g.d)) return rc;
  for (int a = 0; a < kAxes; ++a) {
    if (g.pad[a] > g.k[a] / 2)
      return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute pads is %s: each must be in [0, ksize / 2] (proto)", op,
                  shape_str(c.attr_list("pads")).c_str());
    if (a2_a3 && g.d[a] != 1)
      return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: dilation other than 1 is not supported on %s (aclnn doc)", op,
                  family.c_str());
  }
  if (g.in[0] * g.in[1] * g.in[2] > std::numeric_limits<int32_t>::max())
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 0 (x) %s: D * H * W beyond INT32_MAX (aclnn doc)", op,
                shape_str(x.dims).c_str());
  const bool ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  std::vector<int64_t> want{x.dims[0], x.dims[1]};
  for (int a = 0; a < kAxes; ++a) {
    const int64_t extent = g.d[a] * (g.k[a] - 1) + 1;
    if (g.in[a] < 1 || g.in[a] + 2 * g.pad[a] < extent)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                  "%s: input 0 (x) %s with pads %s is smaller than the dilated kernel on spatial axis %d", op,
                  shape_str(x.dims).c_str(), shape_str(c.attr_list("pads")).c_str(), a);
    g.out[a] = pooled_extent(g.in[a], g.pad[a], g.pad[a], extent, g.s[a], ceil_mode);
    want.push_back(g.out[a]);
  }
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", want, "pooled x")) return rc;
  if (aclError rc = expect_output_shape(c, 1, "output 1 (argmax)", want, "pooled x")) return rc;
  visit_listed<F32, F16, BF16>(x.dtype, [&](auto t) {
    using T = decltype(t);
    if (index_type == ACL_INT64) {
      *run = [c, g] { max_pool_with_argmax<T, int64_t>(c, g); };
    } else {
      *run = [c, g] { max_pool_with_argmax<T, int32_t>(c, g); };
    }
  });
  return ACL_SUCCESS;
}

ACLSIM_OPS(max_pool_3d_with_argmax, {"MaxPool3DWithArgmaxV2", k_max_pool3d_with_argmax_v2})

}  // namespace aclsim
