"""Which CANN op types the onnxruntime-cann 1.24.4 CANN EP's own kernels launch
(``aclopCompileAndExecute``), per ONNX op type of its kernel table
(:mod:`ort_ops.rewrite.placement.cann_ep_kernels`). An empty tuple: the kernel launches no CANN op (an alias
or a device copy). Read from the provider sources, ``microsoft/onnxruntime``
``onnxruntime/core/providers/cann/`` (file named per entry); checked against what the ACL simulator
executes by ``tests/cann/test_ep_kernels_on_sim.py``.
"""

from __future__ import annotations

_UNARY = "math/unary_elementwise_ops.cc: aclopCompileAndExecute(#x) with the ONNX op's name"
_BINARY = ("math/binary_elementwise_ops.cc: the ONNX op's name; cann_utils.cc Broadcast<T> sends BroadcastToD "
           "for an input whose shape differs from the output's")

#: ONNX op type -> the CANN op types its EP kernel can launch
LAUNCHES: dict[str, tuple[str, ...]] = {
    "Abs": ("Abs",),  # _UNARY
    "Add": ("Add", "BroadcastToD"),  # _BINARY
    "AveragePool": ("AvgPoolV2",),  # nn/average_pool.cc (ksize/strides [1, 1, kh, kw], exclusive)
    "BatchNormalization": ("BatchNorm",),  # nn/batch_norm.cc (is_training, data_format "NCHW")
    "Cast": ("Cast",),  # tensor/cast.cc (attr dst_type)
    "Ceil": ("Ceil",),  # _UNARY
    "Conv": ("Conv2D", "Conv3D"),  # nn/conv.cc: Conv3D when the input has more than 4 dims
    "Cos": ("Cos",),  # _UNARY
    "Div": ("Div", "BroadcastToD"),  # _BINARY
    # nn/dropout.cc (opset 12, 13): DropoutV2 in training mode only; otherwise aclrtMemcpyAsync and
    # aclrtMemsetAsync for the mask. tensor/identity_op.cc (opset 7-11): an alias, no launch.
    "Dropout": ("DropoutV2",),
    "Erf": ("Erf",),  # _UNARY
    "Exp": ("Exp",),  # _UNARY (attrs base/scale/shift)
    "Flatten": ("Flatten",),  # tensor/flatten.cc (attr axis)
    "Floor": ("Floor",),  # _UNARY
    # math/gemm.cc (inputs a, b, c, alpha, beta; attrs transpose_a/transpose_b); the 1.24.4 wheel first
    # broadcasts C to [M, N] with BroadcastToD (seen on the simulator; not in the stored gemm.cc)
    "Gemm": ("GEMM", "BroadcastToD"),
    "GlobalAveragePool": ("AvgPoolV2",),  # nn/average_pool.cc (global_pooling, padding_mode "VALID")
    "GlobalMaxPool": ("MaxPoolV3",),  # nn/max_pool.cc (global_pooling)
    "Identity": (),  # tensor/identity_op.cc: output aliases the input
    "Log": ("Log",),  # _UNARY (attrs base/scale/shift)
    "MatMul": ("BatchMatMul",),  # math/matmul.cc
    "MaxPool": ("MaxPoolV3",),  # nn/max_pool.cc
    "MemcpyFromHost": (),  # cann_execution_provider.cc: aclrtMemcpyAsync
    "MemcpyToHost": (),  # cann_execution_provider.cc: aclrtMemcpyAsync
    "Mul": ("Mul", "BroadcastToD"),  # _BINARY
    "Neg": ("Neg",),  # _UNARY
    "Reciprocal": ("Reciprocal",),  # _UNARY
    "Relu": ("Relu",),  # activation/activations.cc
    "Reshape": (),  # tensor/reshape.cc: output aliases the input
    "Round": ("Round",),  # _UNARY
    "Sin": ("Sin",),  # _UNARY
    "Sqrt": ("Sqrt",),  # _UNARY
    "Sub": ("Sub", "BroadcastToD"),  # _BINARY
    "Transpose": ("TransposeD",),  # tensor/transpose.cc (attr perm)
}
