// Kernel entry points (one function per simulated op type or op family).
#pragma once
#include "op_call.h"

namespace aclsim {
// ops_elementwise.cc
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
aclError k_select(const OpCall&, Run*);
// ops_unary.cc
aclError k_relu(const OpCall&, Run*);
aclError k_unary(const OpCall&, Run*);  // dispatches on call.type (Abs, Neg, Exp, ...)
aclError k_cast(const OpCall&, Run*);
// ops_elugrad.cc
aclError k_elu_grad(const OpCall&, Run*);
// ops_matmul.cc
aclError k_batch_matmul(const OpCall&, Run*);
aclError k_gemm(const OpCall&, Run*);
// ops_tensor.cc
aclError k_broadcast_to(const OpCall&, Run*);
aclError k_fill(const OpCall&, Run*);
aclError k_transpose(const OpCall&, Run*);
aclError k_identity(const OpCall&, Run*);
// ops_conv.cc
aclError k_conv2d(const OpCall&, Run*);
}  // namespace aclsim
