// EluGrad(grads, activations) -> y with CANN's numerics (op_kernel/arch35/elu_grad_dag.h):
// cast to float32, t = activations + 1, p = grads * t, mask = activations < 0 (strict),
// y32 = mask ? p : grads, one round-to-nearest-even cast back. And CANN's tiling checks.
//
// EluGradV2(grads, activations; alpha, scale, input_scale, is_result) -> y with the numerics of
// hicann/ops-nn@e5c3fa93 activation/elu_grad_v2/op_kernel/arch35/elu_grad_v2_dag.h:25-85 (float32,
// negcoef = alpha * scale as the tiling computes it, elu_grad_v2_tiling_arch35.cpp:167):
//   is_result:  y = a <= 0 ? (g * input_scale) * (a + negcoef) : g * scale
//   otherwise:  y = a <= 0 ? ((g * input_scale) * negcoef) * expf(a * input_scale) : g * scale
// (`<=`, so a == +-0 takes the first branch; NaN a the second). is_result with alpha < 0 is
// rejected, as the tiling does.
#include <cmath>

#include "dtypes.h"
#include "op_call.h"

namespace aclsim {
namespace {

template <typename T>
void elu_grad(const OpCall& c) {
  const auto* g = ptr<T>(c.in[0].data);
  const auto* a = ptr<T>(c.in[1].data);
  auto* y = ptr<T>(c.out[0].data);
  for (int64_t i = 0; i < c.out[0].numel; ++i) {
    float g32 = static_cast<float>(T::load(g[i]));
    float a32 = static_cast<float>(T::load(a[i]));
    float t = a32 + 1.0f;
    float p = g32 * t;
    bool mask = a32 < 0.0f;
    y[i] = T::store(mask ? p : g32);
  }
}

template <typename T>
void elu_grad_v2(const OpCall& c, float negcoef, float scale, float input_scale, bool is_result) {
  for (int64_t i = 0; i < c.out[0].numel; ++i) {
    const float g = static_cast<float>(load_at<T>(c.in[0].data, i));
    const float a = static_cast<float>(load_at<T>(c.in[1].data, i));
    const float neg = is_result ? fmul(fmul(g, input_scale), fadd(a, negcoef))
                                : fmul(fmul(fmul(g, input_scale), negcoef), std::exp(fmul(a, input_scale)));
    store_at<T>(c.out[0].data, i, static_cast<typename T::Compute>(a <= 0.0f ? neg : fmul(g, scale)));
  }
}

}  // namespace

aclError k_elu_grad(const OpCall& c, Run* run) {
  if (c.in.size() != 2)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "EluGrad: tiling failed: expected 2 inputs (grads, activations), got %zu",
                c.in.size());
  if (c.out.size() != 1)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "EluGrad: tiling failed: expected 1 output (y), got %zu", c.out.size());
  const OpTensor &g = c.in[0], &a = c.in[1], &y = c.out[0];
  if (g.dtype != ACL_FLOAT && g.dtype != ACL_FLOAT16 && g.dtype != ACL_BF16)
    return fail(
        ACL_ERROR_UNSUPPORTED_DATA_TYPE,
        "EluGrad: tiling failed: input 0 (grads) has dtype %s, expected one of ACL_FLOAT, ACL_FLOAT16, ACL_BF16",
        dtype_name(g.dtype));
  if (a.dtype != g.dtype)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "EluGrad: tiling failed: input 1 (activations) has dtype %s, expected %s (the dtype of input 0, grads)",
                dtype_name(a.dtype), dtype_name(g.dtype));
  if (y.dtype != g.dtype)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                "EluGrad: tiling failed: output 0 (y) has dtype %s, expected %s (the dtype of input 0, grads)",
                dtype_name(y.dtype), dtype_name(g.dtype));
  if (a.dims != g.dims)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "EluGrad: tiling failed: input 1 (activations) has shape %s, expected %s (the shape of input 0, grads)",
                shape_str(a.dims).c_str(), shape_str(g.dims).c_str());
  if (y.dims != g.dims)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH,
                "EluGrad: tiling failed: output 0 (y) has shape %s, expected %s (the shape of input 0, grads)",
                shape_str(y.dims).c_str(), shape_str(g.dims).c_str());
  if (g.numel == 0)
    return fail(ACL_ERROR_INVALID_PARAM, "EluGrad: tiling failed: input 0 (grads) is an empty tensor (shape %s)",
                shape_str(g.dims).c_str());
  visit_listed<F32, F16, BF16>(g.dtype, [&](auto t) { *run = [c] { elu_grad<decltype(t)>(c); }; });
  return ACL_SUCCESS;
}

aclError k_elu_grad_v2(const OpCall& c, Run* run) {
  if (aclError rc = expect_same_binary(c, {"input 0 (grads)", "input 1 (activations)", "output 0 (y)"},
                                       {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}))
    return rc;
  const float alpha = c.attr_float("alpha", 1.0f), scale = c.attr_float("scale", 1.0f),
              input_scale = c.attr_float("input_scale", 1.0f);
  const bool is_result = c.attr_int("is_result", 0) != 0;
  if (is_result && alpha < 0.0f)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "EluGradV2: attribute alpha is %g, but with is_result=true it must be >= 0",
                static_cast<double>(alpha));
  const float negcoef = fmul(alpha, scale);
  visit_listed<F32, F16, BF16>(c.in[0].dtype, [&](auto t) {
    *run = [c, negcoef, scale, input_scale, is_result] {
      elu_grad_v2<decltype(t)>(c, negcoef, scale, input_scale, is_result);
    };
  });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(elu_grad, {"EluGrad", k_elu_grad}, {"EluGradV2", k_elu_grad_v2})

}  // namespace aclsim
