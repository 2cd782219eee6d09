// EluGrad(grads, activations) -> y with CANN's numerics (op_kernel/arch35/elu_grad_dag.h):
// cast to float32, t = activations + 1, p = grads * t, mask = activations < 0 (strict),
// y32 = mask ? p : grads, one round-to-nearest-even cast back. And CANN's tiling checks.
#include "dtypes.h"
#include "ops.h"

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
  switch (g.dtype) {
    case ACL_FLOAT: *run = [c] { elu_grad<F32>(c); }; break;
    case ACL_FLOAT16: *run = [c] { elu_grad<F16>(c); }; break;
    default: *run = [c] { elu_grad<BF16>(c); }; break;
  }
  return ACL_SUCCESS;
}

}  // namespace aclsim
