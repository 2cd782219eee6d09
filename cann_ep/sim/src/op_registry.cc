// The one table of op types the simulator implements, and which ORT CANN EP kernel sends each
// (docs/cann_ops.md has the full table and the training graph's placement).
#include <cstring>

#include "ops.h"

namespace aclsim {
namespace {

const KernelEntry kKernels[] = {
    {"EluGrad", k_elu_grad, "ort_ops EluGrad (CANN variant)"},
    {"Relu", k_relu, "activation/activations.cc Relu"},
    {"Add", k_add, "math/binary_elementwise_ops.cc Add"},
    {"Sub", k_sub, "math/binary_elementwise_ops.cc Sub"},
    {"Mul", k_mul, "math/binary_elementwise_ops.cc Mul"},
    {"Div", k_div, "math/binary_elementwise_ops.cc Div"},
    {"RealDiv", k_div, "(CANN name; not sent by the EP)"},
    {"Maximum", k_maximum, "(CANN name; not sent by the EP)"},
    {"Minimum", k_minimum, "(CANN name; not sent by the EP)"},
    {"Less", k_less, "(CANN name; not sent by the EP)"},
    {"LessEqual", k_less_equal, "(CANN name; not sent by the EP)"},
    {"Greater", k_greater, "(CANN name; not sent by the EP)"},
    {"GreaterEqual", k_greater_equal, "(CANN name; not sent by the EP)"},
    {"Equal", k_equal, "(CANN name; not sent by the EP)"},
    {"NotEqual", k_not_equal, "(CANN name; not sent by the EP)"},
    {"Select", k_select, "(CANN name of Where; not sent by the EP)"},
    {"Abs", k_unary, "math/unary_elementwise_ops.cc Abs"},
    {"Neg", k_unary, "math/unary_elementwise_ops.cc Neg"},
    {"Exp", k_unary, "math/unary_elementwise_ops.cc Exp (attrs base/scale/shift)"},
    {"Log", k_unary, "math/unary_elementwise_ops.cc Log (attrs base/scale/shift)"},
    {"Sqrt", k_unary, "math/unary_elementwise_ops.cc Sqrt"},
    {"Reciprocal", k_unary, "math/unary_elementwise_ops.cc Reciprocal"},
    {"Floor", k_unary, "math/unary_elementwise_ops.cc Floor"},
    {"Ceil", k_unary, "math/unary_elementwise_ops.cc Ceil"},
    {"Round", k_unary, "math/unary_elementwise_ops.cc Round"},
    {"Sin", k_unary, "math/unary_elementwise_ops.cc Sin"},
    {"Cos", k_unary, "math/unary_elementwise_ops.cc Cos"},
    {"Erf", k_unary, "math/unary_elementwise_ops.cc Erf"},
    {"Tanh", k_unary, "(CANN name; not sent by the EP)"},
    {"Sigmoid", k_unary, "(CANN name; not sent by the EP)"},
    {"Cast", k_cast, "tensor/cast.cc Cast (attr dst_type)"},
    {"BatchMatMul", k_batch_matmul, "math/matmul.cc MatMul (attrs adj_x1/adj_x2)"},
    {"MatMul", k_batch_matmul, "(CANN name; not sent by the EP)"},
    {"MatMulV2", k_batch_matmul, "(CANN name; not sent by the EP)"},
    {"Conv2D", k_conv2d, "nn/conv.cc Conv on 4-D input (NCHW; attrs strides/pads/dilations/groups)"},
    {"GEMM", k_gemm, "math/gemm.cc Gemm (fp16) and cann_utils.cc aclrtblasGemmEx"},
    {"BroadcastToD", k_broadcast_to, "cann_utils.cc Broadcast (for Add/Sub/Mul/Div broadcasting)"},
    {"Fill", k_fill, "cann_utils.cc Fill"},
    {"TransposeD", k_transpose, "tensor/transpose.cc Transpose (attr perm)"},
    {"Identity", k_identity, "(CANN name; not sent by the EP)"},
};

}  // namespace

const KernelEntry* find_kernel(const std::string& op_type) {
  for (const auto& k : kKernels)
    if (op_type == k.op_type) return &k;
  return nullptr;
}

std::string kernel_names() {
  std::string s;
  for (const auto& k : kKernels) s += (s.empty() ? "" : ", ") + std::string(k.op_type);
  return s;
}

}  // namespace aclsim
