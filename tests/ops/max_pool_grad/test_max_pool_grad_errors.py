"""MaxPoolGrad on the CPU EP where the model is wrong: attributes it does not define fail at
session creation naming them (it would ignore them and compute another gradient), and an X
smaller than the window fails the run as the reference rejects it (for every stride)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnxruntime.capi.onnxruntime_pybind11_state import Fail, InvalidArgument, InvalidGraph, RuntimeException

from op_helpers import make_session
from ort_ops import ort_io
from ort_ops.model_builder import make_op_model
from ort_ops.ops import op
from ort_ops.ops.max_pool_grad import max_pool_grad

OP = op("MaxPoolGrad")
ORT_ERRORS = (Fail, InvalidArgument, InvalidGraph, RuntimeException)


def with_attribute(model: onnx.ModelProto, name: str, value) -> onnx.ModelProto:
    """``model`` with an attribute ``name`` added to its one node (make_op_model refuses it)."""
    model.graph.node[0].attribute.append(onnx.helper.make_attribute(name, value))
    return model


# ONNX MaxPool's attributes MaxPoolGrad lacks, torch's spelling, and a typo of a declared one
@pytest.mark.parametrize("name, value", [("dilations", [2, 2]), ("ceil_mode", 1), ("kernel_shpae", [3, 3]),
                                         ("storage_order", 1), ("auto_pad", "SAME_UPPER"), ("kernel_size", [3, 3]),
                                         ("stride", [2, 2]), ("pad", [1, 1, 1, 1])])
def test_an_attribute_it_does_not_define_fails_session_creation_naming_it(name, value):
    model = with_attribute(make_op_model(OP, "float32", None, name="pool_grad"), name, value)
    with pytest.raises(ORT_ERRORS, match=rf"node 'pool_grad' has attribute {name}, which MaxPoolGrad does not "
                                         r"define \(its attributes: kernel_shape, strides, pads\)"):
        make_session(model)


def test_every_unknown_attribute_is_named():
    model = with_attribute(with_attribute(make_op_model(OP, "float32", None), "ceil_mode", 1), "dilations", [2, 2])
    with pytest.raises(ORT_ERRORS, match=r"has attributes ceil_mode, dilations, which MaxPoolGrad does not define"):
        make_session(model)


@pytest.mark.parametrize("x_shape, kernel, strides", [
    ([1, 1, 1, 3], [2, 2], [2, 2]),   # H 1 < kh 2: (1 - 2) / 2 truncates to 0, floor gives -1
    ([1, 1, 3, 2], [3, 3], [1, 3]),   # W 2 < kw 3, stride 3
    ([1, 1, 1, 1], [2, 2], [1, 1]),   # stride 1 (rejected before the fix too)
])
def test_x_smaller_than_the_window_fails_like_the_reference(x_shape, kernel, strides):
    attrs = {"kernel_shape": kernel, "strides": strides}
    y_shape = x_shape[:2] + [1, 1]  # what truncating division made of the pooled shape
    feeds = {"X": np.zeros(x_shape, np.float32), "Y": np.zeros(y_shape, np.float32),
             "dY": np.ones(y_shape, np.float32)}
    with pytest.raises(ValueError, match=r"is smaller than kernel_shape"):
        max_pool_grad(*feeds.values(), **attrs)
    model = make_op_model(OP, "float32", None, input_shapes=[x_shape, y_shape, y_shape], output_shapes=[x_shape],
                          **attrs)
    with pytest.raises(ORT_ERRORS, match=rf"X shape \[{', '.join(map(str, x_shape))}\] is smaller than the window"):
        ort_io.run(make_session(model), feeds)
