// MaxPool3D on NCDHW, with dilation. Spec: hicann/ops-nn@e5c3fa93 pooling/max_pool3_d/op_graph/
// max_pool3_d_proto.h (REG_OP(MaxPool3D): x float16 / float32 / bfloat16 (double reserved,
// unsupported); ksize, strides, padding required; pads [front, back, top, bottom, left, right]
// (default zeros); dilation (default ones); ceil_mode an int; data_format "NDHWC" by default),
// op_host/max_pool3_d_def.cpp (float16, float32, bfloat16), op_host/max_pool3_d_infershape.cpp (ksize,
// strides and dilation of 5 values in data_format order; the output size floor((L - d * (k - 1) - 1) /
// s) + 1, with ceil_mode rounded up, then one less when the last window would start at or past the
// input plus its front padding) and pool_3d_common/op_host/arch35/max_pool_3d_tiling_common.cpp
// (data_format NCDHW / NDHWC; the N and C entries of ksize / strides / dilation must be 1;
// CALCULATED pads each in [0, the dilated kernel extent)). README: Ascend 950, Atlas A2/A3, Atlas
// inference and training series (not 200I/500 A2). Simulated: data_format "NCDHW", padding
// "CALCULATED".
//
// A window's maximum: its in-image positions (start + j * dilation per axis, padding never takes
// part) scanned in row-major order from -inf, a larger value or a NaN replacing the running one:
// the first maximum wins ties, a NaN window gives its last NaN; the selected element is copied
// bit-exact (MaxPoolV3's rule in this simulator, pooling.cc). A window with no in-image position
// (possible only with dilation) gives -inf.

#include "dtypes.h"
#include "op_call.h"
#include "ops/pool_3d.h"
#include "ops/window_max.h"

namespace aclsim {
namespace {

// ksize / strides / dilation: 5 values [1, 1, d, h, w] (NCDHW), each >= 1.
aclError window_list(const OpCall& c, const char* name, bool required, int64_t* values) {
  if (!c.has_attr(name)) {
    if (required) return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "MaxPool3D: required attribute %s is missing", name);
    for (int a = 0; a < kAxes; ++a) values[a] = 1;
    return ACL_SUCCESS;
  }
  const std::vector<int64_t> v = c.attr_list(name);
  bool ok = v.size() == 5 && v[0] == 1 && v[1] == 1;
  for (size_t i = 2; ok && i < 5; ++i) ok = v[i] >= 1;
  if (!ok)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "MaxPool3D: attribute %s is %s, expected 5 values [1, 1, d, h, w] (NCDHW order), each >= 1", name,
                shape_str(v).c_str());
  for (int a = 0; a < kAxes; ++a) values[a] = v[static_cast<size_t>(2 + a)];
  return ACL_SUCCESS;
}

template <typename T>
void max_pool_3d(const OpCall& c, const PoolGeom3& g) {
  int64_t o = 0;
  for_each_window(g, [&](int64_t p, const int64_t* start) {
    store_window_max<T>(c, o++, window_argmax<T>(c.in[0].data, g, p, start));
  });
}

}  // namespace

// MaxPool3D(x [N, C, D, H, W]; ksize, strides, padding required; pads, dilation, ceil_mode,
// data_format) -> y.
aclError k_max_pool_3d(const OpCall& c, Run* run) {
  if (aclError rc = expect_ncdhw_pool(c)) return rc;
  const OpTensor& x = c.in[0];
  PoolGeom3 g;
  view_as_planes(x, &g);
  if (aclError rc = window_list(c, "ksize", true, g.k)) return rc;
  if (aclError rc = window_list(c, "strides", true, g.s)) return rc;
  if (aclError rc = window_list(c, "dilation", false, g.d)) return rc;
  if (!c.has_attr("padding"))
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "MaxPool3D: required attribute padding is missing");
  const std::string padding = c.attr_string("padding", "");
  if (padding != "CALCULATED")
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "MaxPool3D: attribute padding is \"%s\"; the simulator implements "
                "\"CALCULATED\" only",
                padding.c_str());
  const std::vector<int64_t> pads = c.has_attr("pads") ? c.attr_list("pads") : std::vector<int64_t>(6, 0);
  bool pads_ok = pads.size() == 6;
  for (int a = 0; pads_ok && a < kAxes; ++a) {
    const int64_t extent = g.d[a] * (g.k[a] - 1) + 1;
    for (int side = 0; side < 2; ++side) {
      const int64_t p = pads[static_cast<size_t>(2 * a + side)];
      pads_ok = pads_ok && p >= 0 && p < extent;
    }
  }
  if (!pads_ok)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "MaxPool3D: attribute pads is %s, expected 6 values [front, back, top, bottom, left, right], each >= 0 "
                "and smaller than the dilated kernel extent on its axis",
                shape_str(pads).c_str());
  const bool ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  int64_t extent[kAxes];  // the dilated kernel
  for (int a = 0; a < kAxes; ++a) extent[a] = g.d[a] * (g.k[a] - 1) + 1;
  if (aclError rc = pooled_output(c, pads, extent, g.s, ceil_mode, "dilated kernel", g.out)) return rc;
  for (int a = 0; a < kAxes; ++a) g.pad[a] = pads[static_cast<size_t>(2 * a)];
  visit_listed<F32, F16, BF16>(x.dtype, [&](auto t) { *run = [c, g] { max_pool_3d<decltype(t)>(c, g); }; });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(max_pool_3d, {"MaxPool3D", k_max_pool_3d})

}  // namespace aclsim
