// Flatten(x; axis) -> y = x viewed as the 2-D [d_0 * ... * d_(axis-1), d_axis * ... * d_(r-1)]: a copy.
//
// Spec: the ONNX-compatible prototype REG_OP(Flatten) .INPUT(x, TensorType::ALL()) .ATTR(axis, Int, 1):
// "The value for axis must be in the range [-r, r], where r is the rank of the input tensor. Negative
// value means counting dimensions from the back. When axis = 0, the shape of the output tensor is
// (1, (d_0 X d_1 ... d_n))" (hicann/ops-math conversion/flatten/README.md; GE array_ops.h Flatten).
// Sent by the CANN EP's tensor/flatten.cc (every ONNX Flatten it runs; attr axis as in the node).
#include <cstring>

#include "dtypes.h"
#include "op_call.h"

namespace aclsim {

aclError k_flatten(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 1, 1)) return rc;
  const OpTensor &x = c.in[0], &y = c.out[0];
  if (!visit_dtype(x.dtype, [](auto) {}))
    return fail(ACL_ERROR_UNSUPPORTED_DATA_TYPE, "Flatten: input 0 (x) has dtype %s, which the simulator lacks",
                dtype_name(x.dtype));
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  const int64_t axis_attr = c.attr_int("axis", 1);
  if (axis_attr < -rank || axis_attr > rank)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "Flatten: attribute axis is %lld, expected a value in [%lld, %lld] (rank %lld)",
                static_cast<long long>(axis_attr), static_cast<long long>(-rank), static_cast<long long>(rank),
                static_cast<long long>(rank));
  const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= x.dims[static_cast<size_t>(i)];
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", {outer, inner}, "x flattened at axis")) return rc;
  *run = [c] {
    if (c.in[0].bytes > 0 && c.out[0].data != c.in[0].data) std::memmove(c.out[0].data, c.in[0].data, c.in[0].bytes);
  };
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(flatten, {"Flatten", k_flatten})

}  // namespace aclsim
