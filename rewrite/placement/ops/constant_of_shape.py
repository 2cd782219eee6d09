"""``ConstantOfShape`` (one the pass does not fold: more than ``MAX_CONSTANT_ELEMENTS`` elements, or a
shape computed at run time) -> its output filled on the device: ``aclrtMemsetAsync`` when the
value's bytes are all equal (zeros, bool true), else CANN ``Fill``. Placed as
``ConstantOfShape<Type>`` (one op name per value type; attribute ``value`` kept): ORT infers a
custom op's output type from its input types only. The shape input is read on the host."""

import numpy as np
from onnx import TensorProto, numpy_helper

from ort_ops.rewrite.placement.rule import NodeInfo, PlaceRule

NAMES = {
    TensorProto.FLOAT: "ConstantOfShapeFloat", TensorProto.FLOAT16: "ConstantOfShapeFloat16",
    TensorProto.DOUBLE: "ConstantOfShapeDouble", TensorProto.INT32: "ConstantOfShapeInt32",
    TensorProto.INT64: "ConstantOfShapeInt64", TensorProto.BOOL: "ConstantOfShapeBool",
}


def _value(info: NodeInfo) -> np.ndarray:
    value = info.attr("value")
    return numpy_helper.to_array(value).reshape(-1) if value is not None else np.zeros(1, np.float32)


def _check(info: NodeInfo) -> str | None:
    value = info.attr("value")
    if value is not None and value.data_type not in NAMES:
        return f"value of type {TensorProto.DataType.Name(value.data_type)} has no CANN kernel"
    if value is not None and _value(info).size != 1:
        return f"value holds {_value(info).size} elements; ONNX requires one"
    return None


def _route(info: NodeInfo) -> str:
    raw = _value(info).tobytes()
    return "memset" if len(set(raw)) <= 1 else "fill"  # equal bytes: a memset, no CANN op


def _name(info: NodeInfo) -> str:
    value = info.attr("value")
    return NAMES[value.data_type] if value is not None else NAMES[TensorProto.FLOAT]


RULES = (PlaceRule("ConstantOfShape", route=_route, check=_check, placed_name=_name, min_opset=9),)
