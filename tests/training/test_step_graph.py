"""ort_ops.training.step_graph: the training graph and the optimizer update merged into one graph."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import ort_ops
from ort_ops.domain import DOMAIN, IR_VERSION, ONNX_OPSET, OPSET_VERSION
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
    sess = ort.InferenceSession(model.SerializeToString(), ort_ops.register(ort.SessionOptions()),
                                providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("opt", [SGD(lr=0.1, momentum=0.9, weight_decay=0.01), Adam(lr=0.01)],
                         ids=["sgd", "adam"])
def test_step_graph_equals_the_two_graphs_run_in_turn(opt, fused):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3), dtype=np.float32)
    w = rng.standard_normal(3, dtype=np.float32)
    state = {f"{slot}.w": rng.random(3, dtype=np.float32) for slot in opt.slots}
    if fused:  # after 2 steps, as step_scalars(3) below
        scalars = opt.scalar_states(2)
    else:
        scalars = {n: np.array(v, np.float32) for n, v in opt.step_scalars(3).items()}
    training = tiny_training_graph()
    update = opt.build_graph(SHAPES, np.float32, fused=fused)
    assert {n.domain for n in update.graph.node} == ({"", DOMAIN} if fused else {""})
    step = build_step_graph(training, update, ["w"])
    onnx.checker.check_model(step, full_check=True)
    if fused:
        assert helper.make_opsetid(DOMAIN, OPSET_VERSION) in step.opset_import

    got = run(step, {"x": x, "w": w, **state, **scalars})
    first = run(training, {"x": x, "w": w})
    second = run(update, {"w": w, "grad.w": first["grad.w"], **state, **scalars})
    np.testing.assert_array_equal(first["grad.w"], x.sum(axis=0))
    assert set(got) == set(first) | set(second)
    for name, want in {**first, **second}.items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)


@pytest.mark.parametrize("fused, interface, inputs", [
    (False, {"sgd.neg_lr", "sgd.mom", "sgd.gscale"}, ["x", "w", "sgd.neg_lr", "sgd.mom", "sgd.gscale",
                                                      "momentum_buffer.w"]),
    (True, {"sgd.scalars", "new.sgd.scalars"}, ["x", "w", "sgd.scalars", "momentum_buffer.w"]),
], ids=["unfused", "fused"])
def test_update_nodes_and_internal_values_are_prefixed(fused, interface, inputs):
    update = SGD(lr=0.1, momentum=0.9).build_graph(SHAPES, fused=fused)
    step = build_step_graph(tiny_training_graph(), update, ["w"])
    update_nodes = [n for n in step.graph.node if n.name.startswith(UPDATE_PREFIX)]
    assert len(update_nodes) == len(step.graph.node) - 3
    interface |= {"w", "grad.w", "momentum_buffer.w", "new.w", "new.momentum_buffer.w"}
    for node in update_nodes:
        for value in [*node.input, *node.output]:
            assert value in interface or value.startswith(UPDATE_PREFIX), value
    assert [i.name for i in step.graph.input] == inputs  # no grad.w: produced inside


def test_fused_update_is_one_op_per_parameter_and_a_few_scalar_nodes():
    shapes = {"w": (3,), "b": (2, 2)}
    ops = lambda opt: [(n.domain, n.op_type) for n in opt.build_graph(shapes).graph.node]
    assert ops(SGD(lr=0.1, momentum=0.9)) == [(DOMAIN, "SGDUpdate")] * 2 + [("", "Mul"), ("", "Add")]
    assert ops(SGD(lr=0.1)) == [(DOMAIN, "SGDUpdate")] * 2 + [("", "Mul"), ("", "Add")]
    # Adam: the cann_scalars of every AdamUpdate formed once (8 nodes), the scalar state's Mul
    shared = [("", op) for op in ("Mul", "Sub", "Cast", "Sqrt", "Mul", "Add", "Cast", "Mul")]
    assert ops(Adam()) == shared + [(DOMAIN, "AdamUpdate")] * 2 + [("", "Mul")]
    adam = Adam().build_graph(shapes).graph.node
    assert [list(n.input)[4:] for n in adam[8:10]] == [["adam.scalars", "adam.cann_scalars"]] * 2
    assert [list(n.output) for n in adam[:8] if n.output[0].startswith("new.")] == [["new.adam.bias"]]
    assert [n.attribute[0].i for n in adam[:8] if n.op_type == "Cast"] == [onnx.TensorProto.FLOAT] * 2
    plain = SGD(lr=0.1).build_graph(shapes)
    assert [list(n.input) for n in plain.graph.node][:2] == [["w", "grad.w", "", "sgd.scalars"],
                                                             ["b", "grad.b", "", "sgd.scalars"]]
    with pytest.raises(ValueError, match="fused SGDUpdate update is for float32"):
        SGD().build_graph(shapes, np.float64, fused=True)
    assert SGD().build_graph(shapes, np.float64).graph.node[0].domain == ""  # float64: unfused


@pytest.mark.parametrize("opt", [SGD(lr=0.1, momentum=0.9, dampening=0.25), SGD(lr=0.2), Adam(betas=(0.8, 0.99))],
                         ids=["sgd", "sgd-plain", "adam"])
def test_the_graphs_scalar_update_reaches_scalar_state(opt):
    """The scalar-update nodes advance the state exactly as scalar_state(steps) computes it, over
    many steps (a trainer starts from scalar_states(0); checkpoints store the graph's values, which
    check_scalar_states accepts: the stored values of a resumed run are the graph's own)."""
    update = opt.build_graph(SHAPES)
    names = list(opt.scalar_states(0))
    scalar_nodes = [n for n in update.graph.node if n.domain == ""]
    graph = helper.make_graph(scalar_nodes, "scalars", [i for i in update.graph.input if i.name in names],
                              [o for o in update.graph.output if o.name in {"new." + n for n in names}],
                              update.graph.initializer)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])
    model.ir_version = IR_VERSION
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    outputs = [o.name for o in sess.get_outputs()]
    assert sorted(outputs) == sorted("new." + n for n in names)
    values = opt.scalar_states(0)
    for steps in range(1, 300):
        values = {o[len("new."):]: v for o, v in zip(outputs, sess.run(None, values))}
        for name, want in opt.scalar_states(steps).items():
            np.testing.assert_array_equal(values[name], want, err_msg=f"{name} after {steps} steps")
        opt.check_scalar_states(steps, values)


def test_update_output_name_taken_by_the_training_graph():
    taken = tiny_training_graph([helper.make_node("Identity", ["w"], ["new.w"])])
    with pytest.raises(ValueError, match="'new.w' is already a value of the training graph"):
        build_step_graph(taken, SGD(lr=0.1).build_graph(SHAPES), ["w"])


@pytest.mark.parametrize("fused, name", [(False, "sgd.mom"), (True, "sgd.scalars")])
def test_update_input_name_taken_by_the_training_graph(fused, name):
    taken = tiny_training_graph([helper.make_node("Identity", ["w"], [name])])
    with pytest.raises(ValueError, match=f"'{name}' is already a value of the training graph"):
        build_step_graph(taken, SGD(lr=0.1, momentum=0.9).build_graph(SHAPES, fused=fused), ["w"])


def test_update_opset_of_another_version_is_rejected():
    training = tiny_training_graph()
    training.opset_import.append(helper.make_opsetid(DOMAIN, OPSET_VERSION + 1))
    with pytest.raises(ValueError, match=f"imports {DOMAIN} version {OPSET_VERSION + 1}"):
        build_step_graph(training, SGD(lr=0.1).build_graph(SHAPES), ["w"])


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
