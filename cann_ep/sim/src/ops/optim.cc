// Optimizer updates, elementwise with the exact operation order of CANN's kernels (float32 math,
// float16/bfloat16 load exactly and each output rounds once; every input element is read before
// the outputs at that position are written, so outputs may be the inputs' own buffers):
// - ApplyMomentum (hicann/ops-nn@e5c3fa93 optim/apply_momentum/op_kernel/arch35/apply_momentum_dag.h:40-78,
//   apply_momentum.cpp:35 writes accum into input 1's buffer):
//     accum' = grad + accum * momentum
//     var'   = var - lr * accum'                                   (use_nesterov false)
//     var'   = var - (grad * lr + (accum' * momentum) * lr)        (use_nesterov true)
// - ApplyAdamW (optim/apply_adam_w/op_kernel/arch35/apply_adam_w_dag.h:78-138, 186-266; beta1_power
//   and beta2_power are beta^(t-1): the kernel multiplies them by beta once more):
//     g  = grad * (maximize ? -1 : 1)
//     m' = m * beta1 - (beta1 + -1) * g
//     v' = beta2 * v - ((beta2 + -1) * g) * g
//     var_t = var * ((weight_decay * lr) * -1 + 1)
//     denom = sqrt((v' * -1) / (beta2_power * beta2 + -1)) + epsilon
//     var'  = var_t + ((lr / (beta1_power * beta1 + -1)) * m') / denom   (m', v' unrounded here)
#include <cmath>

#include "dtypes.h"
#include "op_call.h"

namespace aclsim {
namespace {

bool optim_dtype(aclDataType t) { return t == ACL_FLOAT || t == ACL_FLOAT16 || t == ACL_BF16; }

template <typename T>
float scalar(const OpTensor& t) {
  return static_cast<float>(load_at<T>(t.data, 0));
}

template <typename T>
void apply_momentum(const OpCall& c, bool nesterov) {
  const float lr = scalar<T>(c.in[2]), mom = scalar<T>(c.in[4]);
  void* accum = c.in[1].data;  // updated in place
  for (int64_t i = 0; i < c.in[0].numel; ++i) {
    const float var = static_cast<float>(load_at<T>(c.in[0].data, i));
    const float a = static_cast<float>(load_at<T>(accum, i));
    const float g = static_cast<float>(load_at<T>(c.in[3].data, i));
    const float a_new = fadd(g, fmul(a, mom));
    const float var_new =
        nesterov ? fsub(var, fadd(fmul(g, lr), fmul(fmul(a_new, mom), lr))) : fsub(var, fmul(lr, a_new));
    store_at<T>(accum, i, static_cast<typename T::Compute>(a_new));
    store_at<T>(c.out[0].data, i, static_cast<typename T::Compute>(var_new));
  }
}

template <typename T>
void apply_adam_w(const OpCall& c, bool maximize) {
  const float b1p = scalar<T>(c.in[3]), b2p = scalar<T>(c.in[4]), lr = scalar<T>(c.in[5]);
  const float wd = scalar<T>(c.in[6]), b1 = scalar<T>(c.in[7]), b2 = scalar<T>(c.in[8]), eps = scalar<T>(c.in[9]);
  const float factor = maximize ? -1.0f : 1.0f;
  const float decay = fadd(fmul(fmul(wd, lr), -1.0f), 1.0f);
  const float bias2 = fadd(fmul(b2p, b2), -1.0f);
  const float step = fdiv(lr, fadd(fmul(b1p, b1), -1.0f));
  for (int64_t i = 0; i < c.in[0].numel; ++i) {
    const float var = static_cast<float>(load_at<T>(c.in[0].data, i));
    const float m = static_cast<float>(load_at<T>(c.in[1].data, i));
    const float v = static_cast<float>(load_at<T>(c.in[2].data, i));
    const float g = fmul(static_cast<float>(load_at<T>(c.in[10].data, i)), factor);
    const float m_new = fsub(fmul(m, b1), fmul(fadd(b1, -1.0f), g));
    const float v_new = fsub(fmul(b2, v), fmul(fmul(fadd(b2, -1.0f), g), g));
    const float var_t = fmul(var, decay);
    const float denom = fadd(std::sqrt(fdiv(fmul(v_new, -1.0f), bias2)), eps);
    const float var_new = fadd(var_t, fdiv(fmul(step, m_new), denom));
    store_at<T>(c.out[0].data, i, static_cast<typename T::Compute>(var_new));
    store_at<T>(c.out[1].data, i, static_cast<typename T::Compute>(m_new));
    store_at<T>(c.out[2].data, i, static_cast<typename T::Compute>(v_new));
  }
}

// Same dtype as `ref` and same shape (tensors) or one element (scalars).
aclError check_operand(const OpCall& c, const char* what, const OpTensor& t, const char* ref_name, const OpTensor& ref,
                       bool is_scalar) {
  if (t.absent) return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: %s is required", c.type.c_str(), what);
  if (aclError rc = expect_same_dtype(c, what, t, ref_name, ref)) return rc;
  return is_scalar ? expect_one_element(c, what, t) : expect_same_shape(c, what, t, ref_name, ref);
}

template <typename F>
void bind_dtype(aclDataType t, F&& f) {
  switch (t) {
    case ACL_FLOAT: f(F32{}); break;
    case ACL_FLOAT16: f(F16{}); break;
    default: f(BF16{}); break;
  }
}

}  // namespace

// ApplyMomentum(var, accum, lr [1], grad, momentum [1]; use_nesterov, use_locking) -> var.
aclError k_apply_momentum(const OpCall& c, Run* run) {
  if (aclError rc = expect_counts(c, 5, 1)) return rc;
  const OpTensor& var = c.in[0];
  if (!optim_dtype(var.dtype)) return expect_dtype_in(c, "input 0 (var)", var, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16});
  const struct {
    const char* what;
    bool scalar;
  } in[] = {
      {"input 1 (accum)", false}, {"input 2 (lr)", true}, {"input 3 (grad)", false}, {"input 4 (momentum)", true}};
  for (size_t k = 0; k < 4; ++k)
    if (aclError rc = check_operand(c, in[k].what, c.in[k + 1], "input 0 (var)", var, in[k].scalar)) return rc;
  if (c.in[1].staged)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "ApplyMomentum: input 1 (accum) is host or constant memory, but the op updates it in place: pass a "
                "device buffer");
  if (aclError rc = expect_same_dtype(c, "output 0 (var)", c.out[0], "input 0 (var)", var)) return rc;
  if (aclError rc = expect_same_shape(c, "output 0 (var)", c.out[0], "input 0 (var)", var)) return rc;
  const bool nesterov = c.attr_int("use_nesterov", 0) != 0;
  bind_dtype(var.dtype, [&](auto tag) {
    using T = decltype(tag);
    *run = [c, nesterov] { apply_momentum<T>(c, nesterov); };
  });
  return ACL_SUCCESS;
}

// ApplyAdamW(var, m, v, beta1_power, beta2_power, lr, weight_decay, beta1, beta2, epsilon, grad,
// [max_grad_norm]; amsgrad (must be false), maximize) -> var, m, v.
aclError k_apply_adam_w(const OpCall& c, Run* run) {
  if (c.in.size() != 11 && c.in.size() != 12)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "ApplyAdamW: expected 11 or 12 inputs (var, m, v, beta1_power, beta2_power, lr, weight_decay, beta1, "
                "beta2, epsilon, grad[, max_grad_norm]), got %zu",
                c.in.size());
  if (c.out.size() != 3)
    return fail(ACL_ERROR_OP_OUTPUT_NOT_MATCH, "ApplyAdamW: expected 3 outputs (var, m, v), got %zu", c.out.size());
  const OpTensor& var = c.in[0];
  if (!optim_dtype(var.dtype)) return expect_dtype_in(c, "input 0 (var)", var, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16});
  static const char* const kNames[] = {"input 1 (m)",           "input 2 (v)",     "input 3 (beta1_power)",
                                       "input 4 (beta2_power)", "input 5 (lr)",    "input 6 (weight_decay)",
                                       "input 7 (beta1)",       "input 8 (beta2)", "input 9 (epsilon)",
                                       "input 10 (grad)"};
  for (size_t k = 1; k <= 10; ++k) {
    const bool is_scalar = k >= 3 && k <= 9;
    if (aclError rc = check_operand(c, kNames[k - 1], c.in[k], "input 0 (var)", var, is_scalar)) return rc;
  }
  if (c.in.size() == 12 && !c.in[11].absent)  // read only with amsgrad, which is not simulated
    if (aclError rc = check_operand(c, "input 11 (max_grad_norm)", c.in[11], "input 0 (var)", var, false)) return rc;
  if (c.attr_int("amsgrad", 0) != 0)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "ApplyAdamW: attribute amsgrad is true; only amsgrad=false is simulated");
  static const char* const kOut[] = {"output 0 (var)", "output 1 (m)", "output 2 (v)"};
  for (size_t k = 0; k < 3; ++k) {
    if (aclError rc = expect_same_dtype(c, kOut[k], c.out[k], "input 0 (var)", var)) return rc;
    if (aclError rc = expect_same_shape(c, kOut[k], c.out[k], "input 0 (var)", var)) return rc;
  }
  const bool maximize = c.attr_int("maximize", 0) != 0;
  bind_dtype(var.dtype, [&](auto tag) {
    using T = decltype(tag);
    *run = [c, maximize] { apply_adam_w<T>(c, maximize); };
  });
  return ACL_SUCCESS;
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(optim, {"ApplyMomentum", k_apply_momentum}, {"ApplyAdamW", k_apply_adam_w})

}  // namespace aclsim
