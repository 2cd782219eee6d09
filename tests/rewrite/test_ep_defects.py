"""rewrite.placement.ep_defects: each known defect of the CANN EP's own kernels flags the nodes that
hit it and no others (plain CPU: NodeInfo from the placement pass's _Values on one-node models, or
built by hand for unknown shapes). That the flagged cases do fail on the EP, and the unflagged pass:
tests/cann/test_ep_kernels_on_sim.py."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from ort_ops.domain import IR_VERSION
from ort_ops.rewrite.placement.ep_defects import DEFECTS, defect_of
from ort_ops.rewrite.placement.place import _Values
from ort_ops.rewrite.placement.rule import NodeInfo


def info_of(op, input_shapes, opset=13, inits=(), n_outputs=1, **attrs) -> NodeInfo:
    """The NodeInfo the placement pass builds for a one-node ``op`` model (float32 inputs of
    ``input_shapes``; None: no shape; names in ``inits`` are initializers)."""
    inits = {t.name: t for t in inits}
    names = [f"i{k}" for k in range(len(input_shapes))]
    for name in inits:
        names.append(name)
    node = helper.make_node(op, names, [f"y{k}" for k in range(n_outputs)], **attrs)
    inputs = [helper.make_tensor_value_info(n, TP.FLOAT, s) for n, s in zip(names, input_shapes)]
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y0", TP.FLOAT, None)],
                              list(inits.values()))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = IR_VERSION
    return _Values.of_model(model).info(model.graph.node[0], opset)


def _bn_params(c=3, shape=None):
    return [numpy_helper.from_array(np.ones(shape or (c,), np.float32), n) for n in ("s", "b", "m", "v")]


def _flag(info) -> bool:
    return defect_of(info) is not None


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
def test_binary_both_broadcast(op):
    assert _flag(info_of(op, [(4, 1), (1, 5)]))  # both broadcast
    assert _flag(info_of(op, [(4, 5), (5,)]))  # shapes differ: may broadcast
    assert _flag(info_of(op, [("n", 5), ("n", 5)]))  # symbolic: not both static
    assert _flag(info_of(op, [None, (4, 5)]))  # unknown shape
    assert not _flag(info_of(op, [(4, 5), (4, 5)]))
    assert f"b {op} b" in defect_of(info_of(op, [(4, 1), (1, 5)]))


def test_average_pool():
    x = [(1, 1, 6, 6)]
    assert not _flag(info_of("AveragePool", x, opset=11, kernel_shape=[2, 2], strides=[2, 2]))
    assert not _flag(info_of("AveragePool", x, opset=11, kernel_shape=[2, 2], pads=[0, 0, 0, 0]))
    assert not _flag(info_of("AveragePool", x, opset=11, kernel_shape=[2, 2], auto_pad="VALID"))
    assert not _flag(info_of("AveragePool", x, opset=11, kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1))
    for attrs in ({"pads": [1, 1, 1, 1]}, {"pads": [0, 0, 0, 1]}, {"pads": [1, 1, 1, 1], "count_include_pad": 1},
                  {"auto_pad": "SAME_UPPER"}, {"auto_pad": "SAME_LOWER"}):
        assert _flag(info_of("AveragePool", x, opset=11, kernel_shape=[3, 3], **attrs)), attrs
    assert "exclusive from count_include_pad" in defect_of(info_of("AveragePool", x, opset=11, kernel_shape=[3, 3],
                                                                   pads=[1, 1, 1, 1]))
    for shape in ((1, 1, 6), (1, 1, 4, 4, 4), None):  # not 4-D, or unknown rank
        k = [2] * (len(shape) - 2) if shape else [2, 2]
        assert _flag(info_of("AveragePool", [shape], opset=11, kernel_shape=k)), shape


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pools(op):
    assert not _flag(info_of(op, [(2, 3, 4, 5)], opset=1))
    assert not _flag(info_of(op, [("n", 3, "h", "w")], opset=1))  # rank known: 4
    for shape in ((2, 3, 4), (2, 3, 4, 4, 4), None):
        assert _flag(info_of(op, [shape], opset=1)), shape


def test_max_pool():
    x = [(1, 1, 6, 6)]
    assert not _flag(info_of("MaxPool", x, opset=1, kernel_shape=[2, 2], strides=[2, 2]))
    assert not _flag(info_of("MaxPool", x, opset=1, kernel_shape=[3, 3], pads=[1, 1, 1, 1]))  # symmetric
    assert not _flag(info_of("MaxPool", x, opset=1, kernel_shape=[3, 3], pads=[1, 2, 2, 0]))  # left == bottom
    assert not _flag(info_of("MaxPool", x, opset=1, kernel_shape=[3, 3], auto_pad="SAME_UPPER"))
    assert _flag(info_of("MaxPool", x, opset=1, kernel_shape=[3, 3], pads=[0, 1, 0, 1]))  # left != bottom
    assert _flag(info_of("MaxPool", x, opset=1, kernel_shape=[2, 2], auto_pad="SAME_LOWER"))
    for shape in ((1, 1, 6), (1, 1, 4, 4, 4), None):
        k = [2] * (len(shape) - 2) if shape else [2, 2]
        assert _flag(info_of("MaxPool", [shape], opset=1, kernel_shape=k)), shape


def test_conv():
    w = numpy_helper.from_array(np.ones((3, 2, 3, 3), np.float32), "w")
    x = [(1, 2, 5, 5)]
    assert not _flag(info_of("Conv", x, inits=[w], kernel_shape=[3, 3]))
    assert not _flag(info_of("Conv", x, inits=[w], kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    assert _flag(info_of("Conv", x, inits=[w], kernel_shape=[3, 3], pads=[1, 0, 1, 0]))  # left != bottom
    assert _flag(info_of("Conv", x, inits=[w], kernel_shape=[3, 3], auto_pad="SAME_UPPER"))
    for rank in (3, 5):
        wr = numpy_helper.from_array(np.ones([3, 2] + [3] * (rank - 2), np.float32), "w")
        assert _flag(info_of("Conv", [(1, 2, 5, 5, 5)[:rank]], inits=[wr])), rank
    assert _flag(info_of("Conv", [None], inits=[w]))


def test_batch_normalization():
    x = [(2, 3, 4, 5)]
    assert not _flag(info_of("BatchNormalization", x, inits=_bn_params()))
    assert not _flag(info_of("BatchNormalization", x, opset=15, inits=_bn_params(), training_mode=0))
    assert _flag(info_of("BatchNormalization", x, opset=15, inits=_bn_params(), training_mode=1, n_outputs=3))
    assert _flag(info_of("BatchNormalization", x, opset=9, inits=_bn_params(), n_outputs=5))  # training outputs
    assert _flag(info_of("BatchNormalization", x, opset=7, inits=_bn_params(shape=(3, 4, 5)), spatial=0))
    for shape in ((2, 3), (2, 3, 4), (2, 3, 4, 4, 4), None):
        assert _flag(info_of("BatchNormalization", [shape], inits=_bn_params())), shape


def test_dropout():
    x = [(4, 4)]
    ratio = numpy_helper.from_array(np.array(0.5, np.float32), "r")
    off = numpy_helper.from_array(np.array(False), "t")
    on = numpy_helper.from_array(np.array(True), "t")
    assert not _flag(info_of("Dropout", x, opset=13))
    assert not _flag(info_of("Dropout", x, opset=13, inits=[ratio]))
    assert not _flag(info_of("Dropout", x, opset=13, inits=[ratio, off]))
    assert not _flag(info_of("Dropout", x, opset=10))
    assert _flag(info_of("Dropout", x, opset=13, inits=[ratio, on]))
    t = info_of("Dropout", x + [(), ()], opset=12)  # training_mode a graph input: may be true
    assert _flag(t) and "ACL_BOOL" in defect_of(t)


def test_ops_without_defects_and_other_domains():
    assert defect_of(info_of("Relu", [None])) is None
    assert defect_of(info_of("Transpose", [None], perm=[1, 0])) is None
    node = helper.make_node("Mul", ["a", "b"], ["y"], domain="com.example")
    info = NodeInfo(node=node, opset=13, input_types=[TP.FLOAT] * 2, input_shapes=[(4, 1), (1, 5)],
                    output_types=[TP.FLOAT], output_shapes=[None], constants=[None, None])
    assert defect_of(info) is None


def test_table_entries_are_complete():
    from ort_ops.rewrite.placement.cann_ep_kernels import KERNELS

    for d in DEFECTS:
        assert d.op_type in KERNELS, f"{d.op_type}: not an op of the CANN EP's kernel table"
        assert d.reason.startswith(f"the CANN EP's {d.op_type} kernel"), d.reason
        assert "onnxruntime cann/" in d.source, d.source
