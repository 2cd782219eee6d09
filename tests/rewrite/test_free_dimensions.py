"""fix_dimensions: a model's symbolic dimensions given sizes everywhere they are declared (inputs,
outputs, value_info, subgraphs, sequence element types), nothing else changed, bad requests
refused by name."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper

from ort_ops.domain import IR_VERSION
from ort_ops.rewrite.free_dimensions import fix_dimensions, symbolic_dimensions


def dims_of(vi) -> list:
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in vi.type.tensor_type.shape.dim]


def model():
    """y = x + 1, and an If whose branches declare an output of shape ["batch", 3]."""
    branch = helper.make_graph([helper.make_node("Identity", ["y"], ["b"])], "branch", [],
                               [helper.make_tensor_value_info("b", TP.FLOAT, ["batch", 3])])
    nodes = [helper.make_node("Add", ["x", "one"], ["y"], name="add"),
             helper.make_node("If", ["cond"], ["z"], name="if", then_branch=branch, else_branch=branch)]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TP.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("cond", TP.BOOL, []),
         helper.make_tensor_value_info("unnamed", TP.FLOAT, [None, "time"])],
        [helper.make_tensor_value_info("z", TP.FLOAT, ["batch", 3])],
        [onnx.numpy_helper.from_array(np.float32(1.0), "one")],
        value_info=[helper.make_tensor_value_info("y", TP.FLOAT, ["batch", 3])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = IR_VERSION
    return m


def test_every_declaration_of_a_named_dimension_gets_its_size():
    original = model()
    fixed = fix_dimensions(original, {"batch": 5})
    g = fixed.graph
    assert dims_of(g.input[0]) == [5, 3] and dims_of(g.output[0]) == [5, 3] and dims_of(g.value_info[0]) == [5, 3]
    for attr in g.node[1].attribute:
        assert dims_of(attr.g.output[0]) == [5, 3]
    assert dims_of(g.input[2]) == [None, "time"]  # not named in sizes: kept
    assert symbolic_dimensions(fixed) == {"time"}
    onnx.checker.check_model(fixed, full_check=True)
    # the original is unchanged, and nothing but those dimensions differs
    assert symbolic_dimensions(original) == {"batch", "time"}
    assert fix_dimensions(fixed, {}) == fixed
    back = fix_dimensions(original, {})
    assert back == original and back is not original


def test_sequence_element_types_are_fixed_too():
    seq = helper.make_tensor_sequence_value_info("s", TP.FLOAT, ["n", 2])
    graph = helper.make_graph([helper.make_node("SequenceLength", ["s"], ["len"])], "g", [seq],
                              [helper.make_tensor_value_info("len", TP.INT64, [])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    fixed = fix_dimensions(m, {"n": 4})
    assert [d.dim_value for d in fixed.graph.input[0].type.sequence_type.elem_type.tensor_type.shape.dim] == [4, 2]


def test_onnx_runtime_runs_the_fixed_model_at_that_size_only():
    fixed = fix_dimensions(model(), {"batch": 2, "time": 7})
    session = ort.InferenceSession(fixed.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {"x": np.ones((2, 3), np.float32), "cond": np.array(True), "unnamed": np.zeros((1, 7), np.float32)}
    np.testing.assert_array_equal(session.run(None, feeds)[0], np.full((2, 3), 2.0, np.float32))
    with pytest.raises(Exception, match=r"(?s)input: x .*Got: 3 Expected: 2"):
        session.run(None, {**feeds, "x": np.ones((3, 3), np.float32)})


@pytest.mark.parametrize("sizes, message", [
    ({"batsh": 2}, r"no symbolic dimension 'batsh' \(its symbolic dimensions: 'batch', 'time'\)"),
    ({"batch": -1}, r"size of dimension 'batch' must be an int >= 0, got -1"),
    ({"batch": True}, r"size of dimension 'batch' must be an int >= 0, got True"),
    ({"batch": 2.0}, r"size of dimension 'batch' must be an int >= 0, got 2.0"),
    ({"batch": "2"}, r"size of dimension 'batch' must be an int >= 0, got '2'"),
    ({3: 2}, r"dimension names must be strings, got 3"),
])
def test_bad_sizes_are_refused_by_name(sizes, message):
    with pytest.raises(ValueError, match=message):
        fix_dimensions(model(), sizes)


def test_a_model_without_symbolic_dimensions_says_so():
    fixed = fix_dimensions(model(), {"batch": 1, "time": 1})
    with pytest.raises(ValueError, match=r"no symbolic dimension 'batch' \(its symbolic dimensions: none\)"):
        fix_dimensions(fixed, {"batch": 1})


@pytest.mark.parametrize("args, message", [((b"x", {}), "model must be an onnx.ModelProto, got bytes"),
                                           ((None, [("batch", 1)]), "model must be")])
def test_wrong_argument_types(args, message):
    with pytest.raises(TypeError, match=message):
        fix_dimensions(*args)


def test_sizes_must_be_a_mapping():
    with pytest.raises(TypeError, match="sizes must be a mapping of dimension name to size, got list"):
        fix_dimensions(model(), [("batch", 1)])
