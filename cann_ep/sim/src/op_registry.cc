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
    {"TruncateDiv", k_truncate_div, "ort_ops CANN kernels (placed integer Div)"},
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
    {"MatMulV2", k_matmul_v2, "ort_ops CANN kernels (x1, x2, bias; attrs transpose_x1/transpose_x2)"},
    {"Conv2D", k_conv2d, "nn/conv.cc Conv on 4-D input (NCHW; attrs strides/pads/dilations/groups)"},
    {"GEMM", k_gemm, "math/gemm.cc Gemm (fp16) and cann_utils.cc aclrtblasGemmEx"},
    {"BroadcastToD", k_broadcast_to, "cann_utils.cc Broadcast (for Add/Sub/Mul/Div broadcasting)"},
    {"Fill", k_fill, "cann_utils.cc Fill"},
    {"TransposeD", k_transpose, "tensor/transpose.cc Transpose (attr perm)"},
    {"Identity", k_identity, "(CANN name; not sent by the EP)"},
    {"BatchNorm", k_batch_norm,
     "nn/batch_norm.cc BatchNormalization (inference; attrs epsilon/data_format/is_training)"},
    {"AvgPoolV2", k_avg_pool_v2, "nn/average_pool.cc AveragePool, GlobalAveragePool (attrs ksize/strides/pads/...)"},
    {"Flatten", k_flatten, "tensor/flatten.cc Flatten (attr axis)"},
    {"DropoutV2", k_dropout_v2, "nn/dropout.cc Dropout 12, 13 in training mode (attr p)"},
    // Sent by the ort_ops CANN kernels (docs/cann_ops.md, "ACL op types the simulator implements").
    {"Elu", k_elu, "ort_ops CANN kernels (attrs alpha/scale/input_scale)"},
    {"LeakyReluGrad", k_leaky_relu_grad, "ort_ops LeakyReluGrad CANN kernel (attr negative_slope)"},
    {"EluGradV2", k_elu_grad_v2, "ort_ops EluGrad CANN kernel, alpha != 1 (attrs alpha/scale/input_scale/is_result)"},
    {"LogSoftmaxV2", k_log_softmax_v2, "ort_ops CANN kernels (attr axes, one axis)"},
    {"SoftmaxCrossEntropyWithLogits", k_softmax_cross_entropy, "ort_ops CANN kernels (loss, backprop)"},
    {"CrossEntropyLoss", k_cross_entropy_loss, "ort_ops SoftmaxCrossEntropyLossAndGrad on Atlas A2/A3"},
    {"CrossEntropyLossGrad", k_cross_entropy_loss_grad, "ort_ops SoftmaxCrossEntropyLossAndGrad on Atlas A2/A3"},
    {"ReduceSum", k_reduce_sum, "ort_ops CANN kernels (axes input; attrs keep_dims/noop_with_empty_axes)"},
    {"SelectV2", k_select, "ort_ops CANN kernels (condition, then, else)"},
    {"LogicalNot", k_logical_not, "ort_ops CANN kernels"},
    {"LogicalAnd", k_logical_and, "ort_ops CANN kernels"},
    {"LogicalOr", k_logical_or, "ort_ops CANN kernels"},
    {"GatherElements", k_gather_elements, "ort_ops CANN kernels (attr dim; bad index: device fault)"},
    {"ScatterElements", k_scatter_elements, "ort_ops CANN kernels (attrs axis/reduction; bad index: device fault)"},
    {"Transpose", k_transpose_v, "ort_ops CANN kernels (perm: const input)"},
    {"Slice", k_slice, "ort_ops CANN kernels (offsets, size: const inputs)"},
    {"Conv2DBackpropInput", k_conv2d_backprop_input, "ort_ops CANN kernels (input_size: const int32 input)"},
    {"MaxPoolV3", k_max_pool_v3, "ort_ops CANN kernels (attrs ksize/strides/padding_mode/pads/ceil_mode)"},
    {"MaxPoolGrad", k_max_pool_grad, "ort_ops CANN kernels (attrs ksize/strides/padding)"},
    {"ApplyMomentum", k_apply_momentum, "ort_ops CANN kernels (accum updated in place)"},
    {"ApplyAdamW", k_apply_adam_w, "ort_ops CANN kernels (outputs var, m, v)"},
    {"Muls", k_muls_adds, "ort_ops CANN kernels (attr value)"},
    {"Adds", k_muls_adds, "ort_ops CANN kernels (attr value)"},
    {"Axpy", k_axpy, "ort_ops CANN kernels (attr alpha)"},
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
