"""The CANN op types each kernel of the CANN EP launches (``aclopCompileAndExecute``), read from
the EP's sources: microsoft/onnxruntime ``onnxruntime/core/providers/cann/<file>`` (the file is
named per entry). The placement pass checks them against the SoC
(``ort_ops.library.cann_op_unavailable``): a node left to the EP whose op the SoC lacks would fail
its first run with ``ACL_ERROR_OP_NOT_FOUND``, so the session fails at creation instead.

An entry lists the ops every run launches; helpers a kernel adds on some inputs are in the
comments (the binary kernels' ``BroadcastToD`` only runs for inputs of another shape than the
output, which placement never leaves to the EP). ``()``: the kernel launches no CANN op (a device
copy or an alias)."""

from __future__ import annotations

# EP op type -> CANN op types; the EP source file that launches them.
LAUNCHES: dict[str, tuple[tuple[str, ...], str]] = {
    # math/unary_elementwise_ops.cc: REGISTER_ELEMENTWISE_TYPED_COMPUTE launches #x, the ONNX name
    "Abs": (("Abs",), "math/unary_elementwise_ops.cc"),
    "Neg": (("Neg",), "math/unary_elementwise_ops.cc"),
    "Floor": (("Floor",), "math/unary_elementwise_ops.cc"),
    "Ceil": (("Ceil",), "math/unary_elementwise_ops.cc"),
    "Reciprocal": (("Reciprocal",), "math/unary_elementwise_ops.cc"),
    "Sqrt": (("Sqrt",), "math/unary_elementwise_ops.cc"),
    "Log": (("Log",), "math/unary_elementwise_ops.cc"),
    "Exp": (("Exp",), "math/unary_elementwise_ops.cc"),
    "Erf": (("Erf",), "math/unary_elementwise_ops.cc"),
    "Round": (("Round",), "math/unary_elementwise_ops.cc"),
    "Sin": (("Sin",), "math/unary_elementwise_ops.cc"),
    "Cos": (("Cos",), "math/unary_elementwise_ops.cc"),
    # activation/activations.cc: REGISTER_ACTIVATION_TYPED_COMPUTE launches #x
    "Relu": (("Relu",), "activation/activations.cc"),
    # math/binary_elementwise_ops.cc: #x (Div launches Div, not RealDiv); + BroadcastToD
    # (cann_utils.cc Broadcast) for each input whose shape differs from the output's
    "Add": (("Add",), "math/binary_elementwise_ops.cc"),
    "Sub": (("Sub",), "math/binary_elementwise_ops.cc"),
    "Mul": (("Mul",), "math/binary_elementwise_ops.cc"),
    "Div": (("Div",), "math/binary_elementwise_ops.cc"),
    "MatMul": (("BatchMatMul",), "math/matmul.cc"),
    "Gemm": (("GEMM",), "math/gemm.cc"),
    # nn/conv.cc: Conv3D for inputs of rank > 4 (see launches())
    "Conv": (("Conv2D",), "nn/conv.cc"),
    "AveragePool": (("AvgPoolV2",), "nn/average_pool.cc"),
    "GlobalAveragePool": (("AvgPoolV2",), "nn/average_pool.cc"),
    "MaxPool": (("MaxPoolV3",), "nn/max_pool.cc"),
    "GlobalMaxPool": (("MaxPoolV3",), "nn/max_pool.cc"),
    "BatchNormalization": (("BatchNorm",), "nn/batch_norm.cc"),
    # nn/dropout.cc (opset 12+; ratio 0 or inference: a device copy); opsets 7-11: identity_op.cc
    "Dropout": (("Dropout",), "nn/dropout.cc"),
    "Cast": (("Cast",), "tensor/cast.cc"),
    "Transpose": (("TransposeD",), "tensor/transpose.cc"),
    "Flatten": (("Flatten",), "tensor/flatten.cc"),
    # tensor/reshape.cc, tensor/identity_op.cc: no aclopCompileAndExecute (Alias(0, 0) kernels)
    "Reshape": ((), "tensor/reshape.cc"),
    "Identity": ((), "tensor/identity_op.cc"),
    "MemcpyFromHost": ((), "npu_data_transfer.cc"),
    "MemcpyToHost": ((), "npu_data_transfer.cc"),
}


def launches(op_type: str, input_rank: int | None = None) -> tuple[str, ...] | None:
    """The CANN ops the EP's ``op_type`` kernel launches (None: not in the table). ``input_rank``:
    the rank of input 0 where known (Conv launches Conv3D on 5-D input)."""
    entry = LAUNCHES.get(op_type)
    if entry is None:
        return None
    if op_type == "Conv" and input_rank is not None and input_rank > 4:
        return ("Conv3D",)
    return entry[0]
