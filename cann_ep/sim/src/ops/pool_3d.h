// What MaxPool3D and AvgPool3D (hicann/ops-nn pooling/max_pool3_d, pooling/avg_pool3_d) check alike.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "dtypes.h"
#include "op_call.h"

namespace aclsim {

// x (input 0) 5-D and data_format "NCDHW", the one simulated (`default_format` when absent).
inline aclError expect_ncdhw_x(const OpCall& c, const char* default_format) {
  const char* op = c.type.c_str();
  const OpTensor& x = c.in[0];
  if (x.dims.size() != 5)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 0 (x) has shape %s, expected 5-D NCDHW", op,
                shape_str(x.dims).c_str());
  const std::string format = c.attr_string("data_format", default_format);
  if (format != "NCDHW")
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "%s: attribute data_format is \"%s\"%s; the simulator implements NCDHW only", op, format.c_str(),
                c.has_attr("data_format") ? "" : " (the default)");
  return ACL_SUCCESS;
}

// One input and one output of x's dtype (float32, float16, bfloat16: both defs), x 5-D, and
// data_format "NCDHW", the one simulated (CANN's default is "NDHWC").
inline aclError expect_ncdhw_pool(const OpCall& c) {
  if (aclError rc = expect_x_to_y(c, 1, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  return expect_ncdhw_x(c, "NDHWC");
}

// The output extent of one axis (both infershapes): floor((in + front + back - extent) / stride) + 1,
// with ceil_mode rounded up, then one less when the last window would start at or past the input
// plus its front pad.
inline int64_t pooled_extent(int64_t in, int64_t front, int64_t back, int64_t extent, int64_t stride, bool ceil_mode) {
  const int64_t span = in + front + back - extent;
  int64_t o = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if ((o - 1) * stride >= in + front) --o;
  return o;
}

constexpr int kAxes = 3;  // D, H, W

// x (input 0, [N, C, D, H, W]) viewed as [planes = N * C, D, H, W] in a geometry `g` (its planes and
// in[kAxes]).
template <typename Geom>
void view_as_planes(const OpTensor& x, Geom* g) {
  g->planes = x.dims[0] * x.dims[1];
  for (int a = 0; a < kAxes; ++a) g->in[a] = x.dims[static_cast<size_t>(2 + a)];
}

// The output extents `out` of a 3-D pooling of x (input 0) with `pads` (6 values [front, back,
// top, bottom, left, right]) and windows `extent` long (the dilated kernel) every `stride`
// (pooled_extent); an error if x with its pads is shorter than a window on an axis (`window` names
// it, e.g. "kernel"), or if output 0 is not [N, C, out...].
inline aclError pooled_output(const OpCall& c, const std::vector<int64_t>& pads, const int64_t* extent,
                              const int64_t* stride, bool ceil_mode, const char* window, int64_t* out) {
  const OpTensor& x = c.in[0];
  std::vector<int64_t> want{x.dims[0], x.dims[1]};
  for (int a = 0; a < kAxes; ++a) {
    const int64_t in = x.dims[static_cast<size_t>(2 + a)];
    const int64_t front = pads[static_cast<size_t>(2 * a)], back = pads[static_cast<size_t>(2 * a + 1)];
    if (in + front + back - extent[a] < 0 || in < 1)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                  "%s: input 0 (x) %s with pads %s is smaller than the %s on spatial axis %d", c.type.c_str(),
                  shape_str(x.dims).c_str(), shape_str(pads).c_str(), window, a);
    out[a] = pooled_extent(in, front, back, extent[a], stride[a], ceil_mode);
    want.push_back(out[a]);
  }
  return expect_output_shape(c, 0, "output 0 (y)", want, "pooled x");
}

// A 3-D pooling's geometry over x viewed as [planes = N * C, D, H, W].
struct PoolGeom3 {
  int64_t planes = 0;                                                                   // N * C
  int64_t in[kAxes]{}, k[kAxes]{}, s[kAxes]{}, d[kAxes]{}, pad[kAxes]{}, out[kAxes]{};  // pad: the front ones
};

// Calls f(plane, start) for every output position in row-major order (plane, od, oh, ow), start
// the window's first position per axis (negative inside the front padding).
template <typename F>
void for_each_window(const PoolGeom3& g, F&& f) {
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
          const int64_t start[kAxes] = {od * g.s[0] - g.pad[0], oh * g.s[1] - g.pad[1], ow * g.s[2] - g.pad[2]};
          f(p, start);
        }
}

// The element index (in x) of a window's maximum: its in-image positions (start + j * dilation per
// axis, padding never takes part) scanned in row-major order from -inf, a larger value or a NaN
// replacing the running one (the first maximum wins ties, a NaN window gives its last NaN); -1 for
// a window with no in-image position.
template <typename T>
int64_t window_argmax(const void* x, const PoolGeom3& g, int64_t p, const int64_t* start) {
  using V = typename T::Compute;
  const int64_t plane = g.in[0] * g.in[1] * g.in[2];
  V best = -std::numeric_limits<V>::infinity();
  int64_t arg = -1;
  for (int64_t i = 0; i < g.k[0]; ++i) {
    const int64_t zd = start[0] + i * g.d[0];
    if (zd < 0 || zd >= g.in[0]) continue;
    for (int64_t j = 0; j < g.k[1]; ++j) {
      const int64_t zh = start[1] + j * g.d[1];
      if (zh < 0 || zh >= g.in[1]) continue;
      for (int64_t l = 0; l < g.k[2]; ++l) {
        const int64_t zw = start[2] + l * g.d[2];
        if (zw < 0 || zw >= g.in[2]) continue;
        const int64_t at = p * plane + (zd * g.in[1] + zh) * g.in[2] + zw;
        const V v = load_at<T>(x, at);
        if (arg < 0 || v > best || v != v) {
          best = v;
          arg = at;
        }
      }
    }
  }
  return arg;
}

}  // namespace aclsim
