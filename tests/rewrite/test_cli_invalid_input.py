"""The CLI checks its input before rewriting it (issue 19 item 19): an input that onnx.checker
rejects is reported as the input's defect (which node, why, what to do), never as the fused
model's; a bfloat16 Elu (ONNX's Elu has no bfloat16 before opset 22) is computed in float32
between Casts with --elu-in-float32, as PyTorch computes a bfloat16 ELU."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper

from ort_ops import dtypes, ort_io
from ort_ops.domain import IR_VERSION
from ort_ops.rewrite.cli import main
from ort_ops.rewrite.input_check import wrap_elus_in_float32
from ort_ops.rewrite.validation import session

BF16 = dtypes.numpy_dtype("bfloat16")
SHAPE = [3, 5]


def bf16_elu_model(extra_defect: bool = False) -> onnx.ModelProto:
    """Y = Elu(X){0.5} in bfloat16 (invalid at opset 20), dX = Where(Y < 0, dY * (Y + 0.5), dY)."""
    def vi(n, elem=TP.BFLOAT16):
        return helper.make_tensor_value_info(n, elem, SHAPE)

    inits = [helper.make_tensor(n, TP.BFLOAT16, [], [v]) for n, v in (("zero", 0.0), ("alpha", 0.5))]
    nodes = [helper.make_node("Elu", ["X"], ["Y"], name="the_elu", alpha=0.5),
             helper.make_node("Less", ["Y", "zero"], ["neg"], name="less"),
             helper.make_node("Add", ["Y", "alpha"], ["y_a"], name="add"),
             helper.make_node("Mul", ["dY", "y_a"], ["n_branch"], name="mul"),
             helper.make_node("Where", ["neg", "n_branch", "dY"], ["dX"], name="where")]
    outputs = [vi("Y"), vi("dX")]
    if extra_defect:  # an Add of bfloat16 and float32 (only the full check sees it): invalid whatever the Elu
        inits.append(helper.make_tensor("f32", TP.FLOAT, [], [1.0]))
        nodes.append(helper.make_node("Add", ["X", "f32"], ["R"], name="bad_add"))
        outputs.append(vi("R"))
    graph = helper.make_graph(nodes, "bf16", [vi("X"), vi("dY")], outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = IR_VERSION
    return model


@pytest.fixture()
def bf16_path(tmp_path):
    path = tmp_path / "bf16.onnx"
    onnx.save(bf16_elu_model(), str(path))
    return path


def test_the_input_is_named_invalid_with_the_node_and_the_option(bf16_path, tmp_path, capsys):
    out = tmp_path / "out.onnx"
    assert main(["fuse", str(bf16_path), str(out)]) == 2
    err = capsys.readouterr().err
    assert f"the input model {bf16_path} is invalid ONNX" in err, err
    assert "node 'the_elu' (Elu) reads bfloat16 'X'" in err and "takes bfloat16 only from opset 22" in err, err
    assert "the model imports opset 20" in err and "rerun with --elu-in-float32" in err, err
    assert "fused model" not in err and err.rstrip().endswith("nothing written"), err
    assert not out.exists()


def test_elu_in_float32_mends_the_input_and_fuses(bf16_path, tmp_path, capsys):
    out = tmp_path / "out.onnx"
    assert main(["fuse", str(bf16_path), str(out), "--elu-in-float32"]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "--elu-in-float32: Elu node(s) 'the_elu' of bfloat16 compute in float32 between Casts" in printed
    fused = onnx.load(str(out))
    onnx.checker.check_model(fused, full_check=True)
    ops = [(n.op_type, dict((a.name, helper.get_attribute_value(a)) for a in n.attribute)) for n in fused.graph.node]
    assert ops[:3] == [("Cast", {"to": TP.FLOAT}), ("Elu", {"alpha": 0.5}), ("Cast", {"to": TP.BFLOAT16})]
    assert [op for op, _ in ops[3:]] == ["EluGrad"]
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, SHAPE).astype(np.float32).astype(BF16)
    dy = rng.uniform(-1, 1, SHAPE).astype(np.float32).astype(BF16)
    y, dx = ort_io.run(session(fused), {"X": x, "dY": dy}, ["Y", "dX"])
    # PyTorch's bfloat16 ELU: the float32 ELU rounded once; its output-form backward from that Y
    x32 = x.astype(np.float32)
    want_y = np.where(x32 > 0, x32, np.float32(0.5) * np.expm1(x32)).astype(np.float32).astype(BF16)
    np.testing.assert_array_equal(np.asarray(y).view(np.uint16), want_y.view(np.uint16))
    y32, dy32 = want_y.astype(np.float32), dy.astype(np.float32)
    want_dx = np.where(y32 < 0, dy32 * (y32 + np.float32(0.5)), dy32).astype(BF16)
    np.testing.assert_array_equal(np.asarray(dx).astype(np.float32), want_dx.astype(np.float32))


def test_another_defect_is_reported_as_the_inputs_without_the_option_hint(tmp_path, capsys):
    path, out = tmp_path / "bad.onnx", tmp_path / "out.onnx"
    onnx.save(bf16_elu_model(extra_defect=True), str(path))
    for extra in ([], ["--elu-in-float32"]):
        assert main(["fuse", str(path), str(out), *extra]) == 2
        err = capsys.readouterr().err
        assert f"the input model {path} is invalid ONNX" in err and "invalid for other reasons too" in err, err
        assert "rerun with" not in err and "fused model" not in err, err
        assert not out.exists()


def test_an_invalid_input_without_an_elu_is_the_inputs_defect(tmp_path, capsys):
    """A float32 Add of an int64: no site, no Elu; the checker's own words, as the input's."""
    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"], name="odd_add")], "g",
                              [helper.make_tensor_value_info("a", TP.FLOAT, [2]),
                               helper.make_tensor_value_info("b", TP.INT64, [2])],
                              [helper.make_tensor_value_info("c", TP.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = IR_VERSION
    path, out = tmp_path / "add.onnx", tmp_path / "out.onnx"
    onnx.save(model, str(path))
    for command in (["fuse", str(path), str(out)], ["lower", str(path), str(out)]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert f"the input model {path} is invalid ONNX (onnx.checker: " in err and "odd_add" in err, err
        assert "fused model" not in err and "lowerd model" not in err and not out.exists(), err


def test_wrapping_keeps_names_and_leaves_other_elus_alone():
    model = bf16_elu_model()
    f32 = helper.make_node("Elu", ["X32"], ["Y32"], name="f32_elu")
    model.graph.node.append(f32)
    model.graph.input.append(helper.make_tensor_value_info("X32", TP.FLOAT, SHAPE))
    model.graph.output.append(helper.make_tensor_value_info("Y32", TP.FLOAT, SHAPE))
    wrapped = wrap_elus_in_float32(model)
    onnx.checker.check_model(wrapped, full_check=True)
    elus = [n for n in wrapped.graph.node if n.op_type == "Elu"]
    assert [n.name for n in elus] == ["the_elu", "f32_elu"]
    assert list(elus[1].input) == ["X32"] and list(elus[1].output) == ["Y32"]  # float32: untouched
    assert [n.op_type for n in wrapped.graph.node if "Y" in n.output] == ["Cast"]  # Y keeps its name
    assert [n.op_type for n in model.graph.node].count("Cast") == 0  # the input is not changed


def test_a_model_onnx_runtime_cannot_run_is_said_to_be_the_inputs(tmp_path, capsys):
    """A bfloat16 Gemm is valid ONNX that ONNX Runtime's CPU EP has no kernel for: the input cannot be
    loaded either, and the error says so (the rewrite did not cause it)."""
    model = bf16_elu_model()
    model.graph.node.append(helper.make_node("Gemm", ["X", "W"], ["G"], name="bf16_gemm"))
    model.graph.input.append(helper.make_tensor_value_info("W", TP.BFLOAT16, [5, 2]))
    model.graph.output.append(helper.make_tensor_value_info("G", TP.BFLOAT16, [3, 2]))
    path, out = tmp_path / "gemm.onnx", tmp_path / "out.onnx"
    onnx.save(model, str(path))
    assert main(["fuse", str(path), str(out), "--elu-in-float32"]) == 2
    err = capsys.readouterr().err
    assert "ONNX Runtime cannot load the fused model: " in err and "it cannot load the input model either (" in err, err
    assert "Gemm" in err and not out.exists()
