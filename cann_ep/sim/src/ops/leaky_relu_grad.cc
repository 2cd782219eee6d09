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
  if (aclError rc = expect_same_binary(c, {"input 0 (gradients)", "input 1 (features)", "output 0 (backprops)"},
                                       {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}))
    return rc;
  const float slope = c.attr_float("negative_slope", 0.0f);
  visit_listed<F32, F16, BF16>(c.in[0].dtype,
                               [&](auto t) { *run = [c, slope] { leaky_relu_grad<decltype(t)>(c, slope); }; });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(leaky_relu_grad, {"LeakyReluGrad", k_leaky_relu_grad})

}  // namespace aclsim
