// AvgPool3D on NCDHW. Spec: hicann/ops-nn@e5c3fa93 pooling/avg_pool3_d/op_graph/avg_pool3_d_proto.h
// (REG_OP(AvgPool3D): x float16 / float32 / bfloat16; ksize, strides, pads required; ceil_mode
// (false), count_include_pad (true), divisor_override (0: none), data_format ("NDHWC")),
// op_host/avg_pool3_d_def.cpp (float16, float32, bfloat16; configurations ascend910b, ascend910_93,
// ascend950), op_host/avg_pool3_d_infershape.cpp (ksize / strides of 1 (all axes), 3 ([d, h, w]) or
// 5 (data_format order) values; pads of 1, 3 ([d, h, w] each side) or 6 ([front, back, top, bottom,
// left, right]) values, none negative; the output floor((in + pa + pb - k) / s) + 1, with ceil_mode
// rounded up and one less when the last window would start at or past the input plus its front
// pad), pool_3d_common/op_host/arch35/avg_pool_3d_tiling_common.cpp (Ascend 950: each pad in
// [0, k)) and op_host/avg_pool3_d_tiling.cpp:641-649 with op_kernel/avg_pool3d_common.h:100-112
// (Atlas A2/A3: the windows use the front pad on both sides of an axis: back pads are read for the
// output size only). README: Ascend 950, Atlas A2/A3 (not 200I/500 A2, Atlas inference or training).
// Simulated: data_format "NCDHW"; a pad in [0, k) on every SoC (Ascend 950's check).
//
// Each output is the sum of its window's in-image elements (row-major, from +0, in float32, one
// rounding) divided once by divisor_override if set, else by the window's size clipped to the
// padded input when count_include_pad (PyTorch's: end = min(start + k, in + back pad)), else by its
// in-image element count.
#include <algorithm>

#include "dtypes.h"
#include "internal.h"
#include "numerics.h"
#include "op_call.h"
#include "ops/pool_3d.h"

namespace aclsim {
namespace {

struct AvgGeom3 {
  int64_t planes = 0;
  int64_t in[kAxes]{}, k[kAxes]{}, s[kAxes]{}, front[kAxes]{}, back[kAxes]{}, out[kAxes]{};
  bool include_pad = true;
  int64_t divisor = 0;
};

// ksize / strides: 1, 3 or 5 ([1, 1, d, h, w]) values, each >= 1, as [d, h, w].
aclError window_list(const OpCall& c, const char* name, int64_t* values) {
  if (!c.has_attr(name)) return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "AvgPool3D: required attribute %s is missing", name);
  const std::vector<int64_t> v = c.attr_list(name);
  std::vector<int64_t> dhw;
  if (v.size() == 1) dhw.assign(3, v[0]);
  if (v.size() == 3) dhw = v;
  if (v.size() == 5 && v[0] == 1 && v[1] == 1) dhw.assign(v.begin() + 2, v.end());
  if (dhw.size() != 3 || *std::min_element(dhw.begin(), dhw.end()) < 1)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "AvgPool3D: attribute %s is %s, expected 1, 3 ([d, h, w]) or 5 ([1, 1, d, h, w]) values, each >= 1",
                name, shape_str(v).c_str());
  std::copy(dhw.begin(), dhw.end(), values);
  return ACL_SUCCESS;
}

template <typename T>
void avg_pool_3d(const OpCall& c, const AvgGeom3& g) {
  const void* x = c.in[0].data;
  int64_t o = 0;
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
          const int64_t idx[kAxes] = {od, oh, ow};
          int64_t lo[kAxes], hi[kAxes], padded = 1, inside = 1;
          for (int a = 0; a < kAxes; ++a) {
            const int64_t start = idx[a] * g.s[a] - g.front[a];
            const int64_t end = std::min(start + g.k[a], g.in[a] + g.back[a]);
            padded *= end - start;
            lo[a] = std::max<int64_t>(start, 0);
            hi[a] = std::min(start + g.k[a], g.in[a]);
            inside *= std::max<int64_t>(hi[a] - lo[a], 0);
          }
          float sum = 0.0f;
          for (int64_t zd = lo[0]; zd < hi[0]; ++zd)
            for (int64_t zh = lo[1]; zh < hi[1]; ++zh)
              for (int64_t zw = lo[2]; zw < hi[2]; ++zw)
                sum = fadd(sum, static_cast<float>(load_at<T>(x, ((p * g.in[0] + zd) * g.in[1] + zh) * g.in[2] + zw)));
          const int64_t count = g.divisor > 0 ? g.divisor : g.include_pad ? padded : inside;
          store_at<T>(c.out[0].data, o, fdiv(sum, static_cast<float>(count)));
        }
}

}  // namespace

// AvgPool3D(x [N, C, D, H, W]; ksize, strides, pads required; ceil_mode, count_include_pad,
// divisor_override, data_format) -> y.
aclError k_avg_pool_3d(const OpCall& c, Run* run) {
  if (aclError rc = expect_ncdhw_pool(c)) return rc;
  const OpTensor& x = c.in[0];
  AvgGeom3 g;
  view_as_planes(x, &g);
  if (aclError rc = window_list(c, "ksize", g.k)) return rc;
  if (aclError rc = window_list(c, "strides", g.s)) return rc;
  if (!c.has_attr("pads")) return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "AvgPool3D: required attribute pads is missing");
  const std::vector<int64_t> p = c.attr_list("pads");
  std::vector<int64_t> pads;  // [front, back, top, bottom, left, right]
  if (p.size() == 1) pads.assign(6, p[0]);
  if (p.size() == 3) pads = {p[0], p[0], p[1], p[1], p[2], p[2]};
  if (p.size() == 6) pads = p;
  bool ok = pads.size() == 6;
  for (size_t i = 0; ok && i < 6; ++i) ok = pads[i] >= 0 && pads[i] < g.k[i / 2];
  if (!ok)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "AvgPool3D: attribute pads is %s, expected 1, 3 or 6 values ([front, back, top, bottom, left, right]), "
                "each >= 0 and smaller than the kernel on its axis",
                shape_str(p).c_str());
  const std::string family = soc_family();
  const bool front_pads_only = family == "ascend910b" || family == "ascend910_93";  // A2/A3 kernels
  const bool ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  g.include_pad = c.attr_int("count_include_pad", 1) != 0;
  g.divisor = c.attr_int("divisor_override", 0);
  if (g.divisor < 0)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "AvgPool3D: attribute divisor_override is %lld, expected >= 0",
                static_cast<long long>(g.divisor));
  if (aclError rc = pooled_output(c, pads, g.k, g.s, ceil_mode, "kernel", g.out)) return rc;
  for (int a = 0; a < kAxes; ++a) {
    g.front[a] = pads[static_cast<size_t>(2 * a)];
    g.back[a] = front_pads_only ? g.front[a] : pads[static_cast<size_t>(2 * a + 1)];
  }
  visit_listed<F32, F16, BF16>(x.dtype, [&](auto t) { *run = [c, g] { avg_pool_3d<decltype(t)>(c, g); }; });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(avg_pool_3d, {"AvgPool3D", k_avg_pool_3d})

}  // namespace aclsim
