// Kernel entry points (one function per simulated op type or op family).
#pragma once
#include "op_call.h"

namespace aclsim {
// ops/elementwise.cc
aclError k_add(const OpCall&, Run*);
aclError k_sub(const OpCall&, Run*);
aclError k_mul(const OpCall&, Run*);
aclError k_div(const OpCall&, Run*);
aclError k_maximum(const OpCall&, Run*);
aclError k_minimum(const OpCall&, Run*);
aclError k_less(const OpCall&, Run*);
aclError k_less_equal(const OpCall&, Run*);
aclError k_greater(const OpCall&, Run*);
aclError k_greater_equal(const OpCall&, Run*);
aclError k_equal(const OpCall&, Run*);
aclError k_not_equal(const OpCall&, Run*);
aclError k_logical_and(const OpCall&, Run*);
aclError k_logical_or(const OpCall&, Run*);
aclError k_logical_not(const OpCall&, Run*);
aclError k_select(const OpCall&, Run*);  // Select and SelectV2
// ops/truncate_div.cc
aclError k_truncate_div(const OpCall&, Run*);
// ops/unary.cc
aclError k_relu(const OpCall&, Run*);
aclError k_unary(const OpCall&, Run*);  // dispatches on call.type (Abs, Neg, Exp, ...)
aclError k_cast(const OpCall&, Run*);
// ops/elu_grad.cc
aclError k_elu_grad(const OpCall&, Run*);
aclError k_elu_grad_v2(const OpCall&, Run*);
// ops/leaky_relu_grad.cc
aclError k_leaky_relu_grad(const OpCall&, Run*);
// ops/matmul.cc
aclError k_batch_matmul(const OpCall&, Run*);
aclError k_gemm(const OpCall&, Run*);
aclError k_matmul_v2(const OpCall&, Run*);
// ops/tensor.cc
aclError k_broadcast_to(const OpCall&, Run*);
aclError k_fill(const OpCall&, Run*);
aclError k_transpose(const OpCall&, Run*);    // TransposeD (attr perm)
aclError k_transpose_v(const OpCall&, Run*);  // Transpose (perm input)
aclError k_slice(const OpCall&, Run*);
aclError k_identity(const OpCall&, Run*);
// ops/conv.cc
aclError k_conv2d(const OpCall&, Run*);
aclError k_conv2d_backprop_input(const OpCall&, Run*);
// ops/activation.cc
aclError k_elu(const OpCall&, Run*);
// ops/softmax.cc
aclError k_log_softmax_v2(const OpCall&, Run*);
aclError k_softmax_cross_entropy(const OpCall&, Run*);
// ops/cross_entropy_loss.cc
aclError k_cross_entropy_loss(const OpCall&, Run*);
aclError k_cross_entropy_loss_grad(const OpCall&, Run*);
// ops/reduce.cc
aclError k_reduce_sum(const OpCall&, Run*);
// ops/index.cc
aclError k_gather_elements(const OpCall&, Run*);
aclError k_scatter_elements(const OpCall&, Run*);
// ops/pooling.cc
aclError k_max_pool_v3(const OpCall&, Run*);
aclError k_max_pool_grad(const OpCall&, Run*);
// ops/optim.cc
aclError k_apply_momentum(const OpCall&, Run*);
aclError k_apply_adam_w(const OpCall&, Run*);
// ops/scalar_arith.cc
aclError k_muls_adds(const OpCall&, Run*);  // Muls and Adds
aclError k_axpy(const OpCall&, Run*);
// ops/batch_norm.cc
aclError k_batch_norm(const OpCall&, Run*);
// ops/avg_pool.cc
aclError k_avg_pool_v2(const OpCall&, Run*);
// ops/flatten.cc
aclError k_flatten(const OpCall&, Run*);
// ops/dropout.cc
aclError k_dropout_v2(const OpCall&, Run*);
}  // namespace aclsim
