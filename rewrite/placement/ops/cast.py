"""``Cast`` -> CANN ``Cast`` (``dst_type`` = CANN's type code). Placed as ``CastTo<Type>`` (one
op name per destination; attribute ``to`` kept): ORT infers a custom op's output type from its
input types only."""

from onnx import TensorProto

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule

DESTINATIONS = {
    TensorProto.FLOAT: "CastToFloat", TensorProto.FLOAT16: "CastToFloat16",
    TensorProto.BFLOAT16: "CastToBFloat16", TensorProto.DOUBLE: "CastToDouble",
    TensorProto.INT32: "CastToInt32", TensorProto.INT64: "CastToInt64", TensorProto.BOOL: "CastToBool",
}


def _check(info: NodeInfo) -> str | None:
    to = info.attr("to")
    if to not in DESTINATIONS:
        return f"Cast to {TensorProto.DataType.Name(to) if to is not None else '?'} has no CANN kernel"
    if info.attr("saturate", 1) != 1:
        return "saturate=0 (float8 casts) is not supported"
    return None


RULES = (PlaceRule("Cast", check=_check, placed_name=lambda info: DESTINATIONS[info.attr("to")]),)
