// What MaxPool3D and AvgPool3D (hicann/ops-nn pooling/max_pool3_d, pooling/avg_pool3_d) check alike.
#pragma once

#include <string>

#include "op_call.h"

namespace aclsim {

// One input and one output of x's dtype (float32, float16, bfloat16: both defs), x 5-D, and
// data_format "NCDHW", the one simulated (CANN's default is "NDHWC").
inline aclError expect_ncdhw_pool(const OpCall& c) {
  const char* op = c.type.c_str();
  if (aclError rc = expect_counts(c, 1, 1)) return rc;
  const OpTensor &x = c.in[0], &y = c.out[0];
  if (aclError rc = expect_dtype_in(c, "input 0 (x)", x, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  if (x.dims.size() != 5)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 0 (x) has shape %s, expected 5-D NCDHW", op,
                shape_str(x.dims).c_str());
  const std::string format = c.attr_string("data_format", "NDHWC");
  if (format != "NCDHW")
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "%s: attribute data_format is \"%s\"%s; the simulator implements NCDHW only", op, format.c_str(),
                c.has_attr("data_format") ? "" : " (the default)");
  return ACL_SUCCESS;
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

}  // namespace aclsim
