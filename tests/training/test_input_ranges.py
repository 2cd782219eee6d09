"""label_ranges on hand-built graphs: each way a label reaches an index."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from ort_ops.input_ranges import check_labels, label_ranges


def _model(nodes, inputs, inits=(), outputs=("out",)):
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info(o, TP.FLOAT, None) for o in outputs],
                              list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _label(elem=TP.INT64, shape=(8,)):
    return helper.make_tensor_value_info("target", elem, list(shape))


def _logits(shape=(8, 10)):
    return helper.make_tensor_value_info("logits", TP.FLOAT, list(shape))


def _gather_elements(index="t1", data="logits", out="out", axis=1):
    return [helper.make_node("Unsqueeze", ["target" if index == "t1" else index, "ax1"], ["t1_"], name="unsq"),
            helper.make_node("GatherElements", [data, "t1_"], [out], axis=axis, name="ge")]


AX1 = numpy_helper.from_array(np.array([1], np.int64), "ax1")


def test_not_equal_ignore_index_is_read():
    nodes = [helper.make_node("NotEqual", ["target", "ign"], ["keep"]), *_gather_elements()]
    ign = numpy_helper.from_array(np.array(-100, np.int64), "ign")
    ranges = label_ranges(_model(nodes, [_label(), _logits()], [AX1, ign]), ["target"])
    assert ranges["target"].ignored == {-100}


def test_ignore_index_from_a_constant_node_is_read():
    nodes = [helper.make_node("Constant", [], ["ign"], value=numpy_helper.from_array(np.array(-100, np.int64))),
             helper.make_node("Equal", ["target", "ign"], ["skip"]), *_gather_elements()]
    ranges = label_ranges(_model(nodes, [_label(), _logits()], [AX1]), ["target"])
    assert ranges["target"].ignored == {-100}


def test_the_smallest_indexed_axis_bounds_the_label():
    nodes = [*_gather_elements(),
             helper.make_node("Gather", ["table", "target"], ["emb"], axis=0, name="g5")]
    table = helper.make_tensor_value_info("table", TP.FLOAT, [5, 3])
    ranges = label_ranges(_model(nodes, [_label(), _logits(), table], [AX1], ["out", "emb"]), ["target"])
    assert ranges["target"].size == 5
    with pytest.raises(ValueError, match="must be 0 to 4"):
        check_labels({"target": np.array([0, 7, 1, 2, 3, 4, 0, 1])}, ranges)


def test_a_cast_label_is_followed():
    nodes = [helper.make_node("Cast", ["target"], ["t64"], to=TP.INT64),
             helper.make_node("Unsqueeze", ["t64", "ax1"], ["t1_"]),
             helper.make_node("GatherElements", ["logits", "t1_"], ["out"], axis=1)]
    ranges = label_ranges(_model(nodes, [_label(TP.INT32), _logits()], [AX1]), ["target"])
    assert ranges["target"].size == 10


def test_gather_without_axis_indexes_axis_0():
    nodes = [helper.make_node("Gather", ["table", "target"], ["out"])]
    table = helper.make_tensor_value_info("table", TP.FLOAT, [7, 3])
    assert label_ranges(_model(nodes, [_label(), table]), ["target"])["target"].size == 7


def test_a_label_used_as_data_is_not_bounded_by_itself():
    idx = numpy_helper.from_array(np.array([0, 1], np.int64), "idx")
    nodes = [helper.make_node("Gather", ["target", "idx"], ["picked"]),
             helper.make_node("Cast", ["picked"], ["out"], to=TP.FLOAT)]
    assert label_ranges(_model(nodes, [_label()], [idx]), ["target"]) == {}


def test_float_inputs_are_not_labels():
    nodes = [helper.make_node("Cast", ["x"], ["xi"], to=TP.INT64),
             helper.make_node("Gather", ["table", "xi"], ["out"])]
    x = helper.make_tensor_value_info("x", TP.FLOAT, [8])
    table = helper.make_tensor_value_info("table", TP.FLOAT, [7, 3])
    assert label_ranges(_model(nodes, [x, table]), ["x"]) == {}


def test_a_where_condition_made_from_the_label_is_not_a_value_of_it():
    """target -> Cast(bool) -> Where's *condition*: the Where's values are other tensors."""
    nodes = [helper.make_node("Cast", ["target"], ["tb"], to=TP.BOOL),
             helper.make_node("Where", ["tb", "other", "other"], ["picked"]),
             helper.make_node("Gather", ["table", "picked"], ["out"])]
    other = helper.make_tensor_value_info("other", TP.INT64, [8])
    table = helper.make_tensor_value_info("table", TP.FLOAT, [7, 3])
    assert label_ranges(_model(nodes, [_label(), other, table]), ["target"]) == {}
