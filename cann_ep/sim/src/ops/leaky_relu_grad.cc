// LeakyReluGrad(gradients, features; negative_slope) -> backprops with the semantics of
// hicann/ops-nn activation/leaky_relu_grad (op_graph/leaky_relu_grad_proto.h, README.md):
//   backprops = features > 0 ? gradients : gradients * negative_slope
// (strict >: +-0 and NaN features take the product), float32 math, one round-to-nearest-even cast
// to float16/bfloat16; dtypes of op_host/leaky_relu_grad_def.cpp (float32, float16, bfloat16; one
// dtype, and here one shape: the broadcasting the prototype allows is not modelled).
#include "dtypes.h"
#include "op_call.h"

namespace aclsim {
namespace {

template <typename T>
void leaky_relu_grad(const OpCall& c, float slope) {
  for (int64_t i = 0; i < c.out[0].numel; ++i) {
    const float g = static_cast<float>(load_at<T>(c.in[0].data, i));
    const float f = static_cast<float>(load_at<T>(c.in[1].data, i));
    store_at<T>(c.out[0].data, i, static_cast<typename T::Compute>(f > 0.0f ? g : fmul(g, slope)));
  }
}

}  // namespace

aclError k_leaky_relu_grad(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 2, 1)) return rc;
  const OpTensor &g = c.in[0], &f = c.in[1], &y = c.out[0];
  if (aclError rc = expect_dtype_in(c, "input 0 (gradients)", g, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})) return rc;
  if (aclError rc = expect_same_dtype(c, "input 1 (features)", f, "input 0 (gradients)", g)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (backprops)", y, "input 0 (gradients)", g)) return rc;
  if (aclError rc = expect_same_shape(c, "input 1 (features)", f, "input 0 (gradients)", g)) return rc;
  if (aclError rc = expect_same_shape(c, "output 0 (backprops)", y, "input 0 (gradients)", g)) return rc;
  const float slope = c.attr_float("negative_slope", 0.0f);
  switch (g.dtype) {
    case ACL_FLOAT: *run = [c, slope] { leaky_relu_grad<F32>(c, slope); }; break;
    case ACL_FLOAT16: *run = [c, slope] { leaky_relu_grad<F16>(c, slope); }; break;
    default: *run = [c, slope] { leaky_relu_grad<BF16>(c, slope); }; break;
  }
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(leaky_relu_grad, {"LeakyReluGrad", k_leaky_relu_grad})

}  // namespace aclsim
