"""ort_ops.training.step_graph: the training graph and the optimizer update merged into one graph."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from ort_ops.domain import IR_VERSION, ONNX_OPSET
from ort_ops.training.optim import SGD, Adam
from ort_ops.training.step_graph import UPDATE_PREFIX, build_step_graph

SHAPES = {"w": (3,)}


def tiny_training_graph(extra_nodes=(), extra_outputs=(), opset=ONNX_OPSET) -> onnx.ModelProto:
    """loss = sum(x * w), grad.w = sum over rows of x."""
    f = TensorProto.FLOAT
    nodes = [helper.make_node("Mul", ["x", "w"], ["xw"]),
             helper.make_node("ReduceSum", ["xw"], ["loss"], keepdims=0),
             helper.make_node("ReduceSum", ["x", "axes0"], ["grad.w"], keepdims=0), *extra_nodes]
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("x", f, [2, 3]), helper.make_tensor_value_info("w", f, [3])],
        [helper.make_tensor_value_info("loss", f, []), helper.make_tensor_value_info("grad.w", f, [3]),
         *extra_outputs],
        [helper.make_tensor("axes0", TensorProto.INT64, [1], [0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = IR_VERSION
    return model


def run(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


@pytest.mark.parametrize("opt", [SGD(lr=0.1, momentum=0.9, weight_decay=0.01), Adam(lr=0.01)],
                         ids=["sgd", "adam"])
def test_step_graph_equals_the_two_graphs_run_in_turn(opt):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3), dtype=np.float32)
    w = rng.standard_normal(3, dtype=np.float32)
    state = {f"{slot}.w": rng.random(3, dtype=np.float32) for slot in opt.slots}
    scalars = {n: np.array(v, np.float32) for n, v in opt.step_scalars(3).items()}
    training = tiny_training_graph()
    update = opt.build_graph(SHAPES, np.float32)
    step = build_step_graph(training, update, ["w"])
    onnx.checker.check_model(step, full_check=True)

    got = run(step, {"x": x, "w": w, **state, **scalars})
    first = run(training, {"x": x, "w": w})
    second = run(update, {"w": w, "grad.w": first["grad.w"], **state, **scalars})
    np.testing.assert_array_equal(first["grad.w"], x.sum(axis=0))
    assert set(got) == set(first) | set(second)
    for name, want in {**first, **second}.items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)


def test_update_nodes_and_internal_values_are_prefixed():
    step = build_step_graph(tiny_training_graph(), SGD(lr=0.1, momentum=0.9).build_graph(SHAPES), ["w"])
    update_nodes = [n for n in step.graph.node if n.name.startswith(UPDATE_PREFIX)]
    assert len(update_nodes) == len(step.graph.node) - 3
    interface = {"w", "grad.w", "momentum_buffer.w", "sgd.mom", "sgd.gscale", "new.w", "new.momentum_buffer.w"}
    for node in update_nodes:
        for value in [*node.input, *node.output]:
            assert value in interface or value.startswith(UPDATE_PREFIX), value
    inputs = [i.name for i in step.graph.input]
    assert inputs == ["x", "w", "sgd.mom", "sgd.gscale", "momentum_buffer.w"]  # no grad.w: produced inside


def test_update_output_name_taken_by_the_training_graph():
    taken = tiny_training_graph([helper.make_node("Identity", ["w"], ["new.w"])])
    with pytest.raises(ValueError, match="'new.w' is already a value of the training graph"):
        build_step_graph(taken, SGD(lr=0.1).build_graph(SHAPES), ["w"])


def test_update_input_name_taken_by_the_training_graph():
    taken = tiny_training_graph([helper.make_node("Identity", ["w"], ["sgd.mom"])])
    with pytest.raises(ValueError, match="'sgd.mom' is already a value of the training graph"):
        build_step_graph(taken, SGD(lr=0.1, momentum=0.9).build_graph(SHAPES), ["w"])


def test_internal_name_taken_by_the_training_graph():
    update = SGD(lr=0.1).build_graph(SHAPES)
    internal = next(o for n in update.graph.node for o in n.output if not o.startswith("new."))
    taken = tiny_training_graph([helper.make_node("Identity", ["w"], [UPDATE_PREFIX + internal])])
    with pytest.raises(ValueError, match="training graph already has values named"):
        build_step_graph(taken, update, ["w"])


def test_parameter_dtype_differs():
    update = SGD(lr=0.1).build_graph(SHAPES, np.float64)
    with pytest.raises(ValueError, match="'w' has another dtype"):
        build_step_graph(tiny_training_graph(), update, ["w"])


def test_old_opset_is_rejected():
    with pytest.raises(ValueError, match="opset 6"):
        build_step_graph(tiny_training_graph(opset=6), SGD(lr=0.1).build_graph(SHAPES), ["w"])
