"""ort_ops.training.export_training_graph: names, parameter handling, numerics vs eager autograd, errors,
atomic writes, and the committed fixtures in tests/fixtures/."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
import torch
from torch import nn

from models import fixtures, zoo
from ort_ops.domain import IR_VERSION
from ort_ops.training import GRAD_PREFIX, LOSS_NAME, export_training_graph
from ort_ops.training.verify import TOLERANCES, eager_loss_and_grads, feeds_for, run_ort, to_numpy

CE = nn.CrossEntropyLoss()


def assert_matches_eager(model, module, inputs, loss_fn, targets=(), feeds=None):
    """ORT outputs of ``model`` == eager loss and gradients, within the dtype's tolerance."""
    got = run_ort(model, feeds if feeds is not None else feeds_for(model, module, inputs, targets))
    want = eager_loss_and_grads(module, inputs, loss_fn, targets)
    assert list(got) == list(want)  # same names, same order
    for name, ref in want.items():
        rtol, atol = TOLERANCES[ref.dtype]
        r = to_numpy(ref).astype(np.float64)
        g = np.asarray(got[name]).astype(np.float64)
        assert g.shape == r.shape, name
        err = np.max(np.abs(g - r))
        assert err <= atol + rtol * np.max(np.abs(r)), f"{name}: max abs err {err}"


@pytest.fixture(scope="module")
def mlp_case():
    module = zoo.elu_mlp_alpha(0.5)
    x, y = zoo.example_batch("mlp", 4)
    return module, x, y


@pytest.fixture(scope="module")
def mlp_init(mlp_case):
    module, x, y = mlp_case
    return export_training_graph(module, (x,), CE, targets=(y,))


@pytest.fixture(scope="module")
def mlp_inputs(mlp_case):
    module, x, y = mlp_case
    return export_training_graph(module, (x,), CE, targets=(y,), params_as_inputs=True)


def param_names(module):
    return [n for n, _ in module.named_parameters()]


def test_output_names_are_loss_then_one_gradient_per_parameter(mlp_case, mlp_init):
    module = mlp_case[0]
    expected = [LOSS_NAME] + [GRAD_PREFIX + n for n in param_names(module)]
    assert expected[:2] == ["loss", "grad.net.0.weight"]
    assert [o.name for o in mlp_init.graph.output] == expected


def test_parameters_are_named_initializers_by_default(mlp_case, mlp_init):
    module = mlp_case[0]
    assert [i.name for i in mlp_init.graph.input] == ["input", "target"]
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in mlp_init.graph.initializer}
    for name, p in module.named_parameters():
        np.testing.assert_array_equal(inits[name], p.detach().numpy())


def test_params_as_inputs_makes_parameters_graph_inputs(mlp_case, mlp_inputs):
    module = mlp_case[0]
    assert [i.name for i in mlp_inputs.graph.input] == ["input", "target", *param_names(module)]
    assert not set(param_names(module)) & {t.name for t in mlp_inputs.graph.initializer}


def test_model_is_valid_with_project_ir_version(mlp_init, mlp_inputs):
    for model in (mlp_init, mlp_inputs):
        assert model.ir_version == IR_VERSION
        onnx.checker.check_model(model, full_check=True)
        for node in model.graph.node:
            assert all(p.key != "pkg.torch.onnx.stack_trace" for p in node.metadata_props)


def test_loss_and_gradients_match_eager(mlp_case, mlp_init, mlp_inputs):
    module, x, y = mlp_case
    assert_matches_eager(mlp_init, module, (x,), CE, (y,))
    assert_matches_eager(mlp_inputs, module, (x,), CE, (y,))


def test_fed_parameters_are_used_not_folded(mlp_case, mlp_inputs):
    """Feeding other parameter values (as a training step would) changes the result like eager."""
    module, x, y = mlp_case
    other = zoo.elu_mlp_alpha(0.5, seed=7)
    x2, y2 = zoo.example_batch("mlp", 4, seed=3)
    assert_matches_eager(mlp_inputs, other, (x2,), CE, (y2,))
    base = run_ort(mlp_inputs, feeds_for(mlp_inputs, module, (x2,), (y2,)))
    moved = run_ort(mlp_inputs, feeds_for(mlp_inputs, other, (x2,), (y2,)))
    assert not np.allclose(base["grad.net.0.weight"], moved["grad.net.0.weight"])


def test_elu_backward_pattern_is_the_exporters(mlp_init):
    """alpha=0.5, not inplace: Where(LessOrEqual(X, 0), Mul(Mul(dY, alpha), Exp(X)), dY)."""
    ops = [n.op_type for n in mlp_init.graph.node]
    assert ops.count("Elu") == 2 and ops.count("LessOrEqual") == 2
    elu_inputs = {n.input[0] for n in mlp_init.graph.node if n.op_type == "Elu"}
    for node in mlp_init.graph.node:
        if node.op_type == "LessOrEqual":
            assert node.input[0] in elu_inputs  # the ELU *input* X, not its output


def test_float16_export_keeps_module_and_matches(mlp_case):
    module, x, y = mlp_case
    model = export_training_graph(module, (x,), CE, targets=(y,), dtype=torch.float16, verify=False)
    assert next(module.parameters()).dtype == torch.float32  # the user's module is untouched
    inputs = {i.name: i.type.tensor_type.elem_type for i in model.graph.input}
    assert inputs == {"input": onnx.TensorProto.FLOAT16, "target": onnx.TensorProto.INT64}
    from ort_ops.training.export import prepare

    half, (xh,), (yh,) = prepare(module, (x,), (y,), torch.float16)
    assert_matches_eager(model, half, (xh,), CE, (yh,))


def test_frozen_parameters_stay_initializers_without_gradient():
    torch.manual_seed(1)
    module = nn.Sequential(nn.Linear(5, 4), nn.ELU(), nn.Linear(4, 3))
    module[0].weight.requires_grad_(False)
    x = torch.randn(3, 5)
    model = export_training_graph(module, (x,), lambda o: o.square().mean(), params_as_inputs=True)
    assert [o.name for o in model.graph.output] == ["loss", "grad.0.bias", "grad.2.weight", "grad.2.bias"]
    assert [i.name for i in model.graph.input] == ["input", "0.bias", "2.weight", "2.bias"]
    assert "0.weight" in {t.name for t in model.graph.initializer}
    assert_matches_eager(model, module, (x,), lambda o: o.square().mean())


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 2)
        self.b = nn.Linear(4, 2)

    def forward(self, u, v):
        return nn.functional.elu(self.a(u) + self.b(v))


def test_several_inputs_float_target_and_custom_names():
    torch.manual_seed(2)
    module, u, v, t = TwoInputs(), torch.randn(2, 3), torch.randn(2, 4), torch.randn(2, 2)
    mse = nn.MSELoss()
    model = export_training_graph(module, (u, v), mse, targets=(t,), input_names=["u", "v", "y"])
    assert [i.name for i in model.graph.input] == ["u", "v", "y"]
    assert_matches_eager(model, module, (u, v), mse, (t,))
    default = export_training_graph(module, (u, v), mse, targets=(t,), verify=False)
    assert [i.name for i in default.graph.input] == ["input", "input_1", "target"]


def test_path_is_written_atomically(tmp_path, mlp_case):
    module, x, y = mlp_case
    out = tmp_path / "g.onnx"
    model = export_training_graph(module, (x,), CE, out, targets=(y,), verify=False)
    assert onnx.load(out) == model
    assert os.listdir(tmp_path) == ["g.onnx"]
    # A failing export leaves an existing file alone and no temporary behind.
    out.write_bytes(b"old")
    with pytest.raises(ValueError, match="scalar"):
        export_training_graph(module, (x,), lambda o, t: o, out, targets=(y,))
    assert out.read_bytes() == b"old"
    with pytest.raises(FileNotFoundError):
        export_training_graph(module, (x,), CE, tmp_path / "missing" / "g.onnx", targets=(y,), verify=False)
    assert sorted(os.listdir(tmp_path)) == ["g.onnx"]


# --- errors ----------------------------------------------------------------------------------


def test_no_trainable_parameters():
    with pytest.raises(ValueError, match="ELU has no trainable parameters"):
        export_training_graph(nn.ELU(), (torch.randn(2, 3),), lambda o: o.sum())
    frozen = nn.Linear(3, 2).requires_grad_(False)
    with pytest.raises(ValueError, match="no trainable parameters"):
        export_training_graph(frozen, (torch.randn(2, 3),), lambda o: o.sum())


@pytest.mark.parametrize(
    "loss_fn,message",
    [
        (lambda o: o, r"scalar tensor \(0-d\), got shape \(2, 2\)"),
        (lambda o: o.sum(dim=0), r"got shape \(2,\)"),
        (lambda o: float(o.sum().detach()), "scalar tensor, got float"),
        (lambda o: (o > 0).sum(), "floating-point scalar, got dtype torch.int64"),
    ],
)
def test_loss_must_be_a_float_scalar(loss_fn, message):
    with pytest.raises(ValueError, match=message):
        export_training_graph(nn.Linear(3, 2), (torch.randn(2, 3),), loss_fn)


def test_bad_inputs_and_names():
    lin = nn.Linear(3, 2)
    with pytest.raises(TypeError, match="must be a torch.Tensor, got list"):
        export_training_graph(lin, ([1.0, 2.0, 3.0],), lambda o: o.sum())
    with pytest.raises(ValueError, match="input_names must be 1 distinct names"):
        export_training_graph(lin, (torch.randn(2, 3),), lambda o: o.sum(), input_names=["a", "b"])
    with pytest.raises(ValueError, match=r"\['weight'\] clash with parameter"):
        export_training_graph(lin, (torch.randn(2, 3),), lambda o: o.sum(), input_names=["weight"])
    with pytest.raises(ValueError, match="floating-point torch dtype"):
        export_training_graph(lin, (torch.randn(2, 3),), lambda o: o.sum(), dtype=torch.int32)


def test_unused_parameter_is_named():
    class Unused(nn.Module):
        def __init__(self):
            super().__init__()
            self.used = nn.Linear(3, 2)
            self.spare = nn.Linear(3, 2)

        def forward(self, x):
            return self.used(x)

    with pytest.raises(ValueError, match=r"\['spare.weight', 'spare.bias'\] receive no gradient"):
        export_training_graph(Unused(), (torch.randn(2, 3),), lambda o: o.sum())


def test_missing_exporter_translation_is_reported_in_one_line():
    module = nn.Sequential(nn.Conv2d(1, 2, 3), nn.AdaptiveMaxPool2d(3))
    with pytest.raises(ValueError, match=r"No ONNX function found for .*adaptive_max_pool2d.* "
                                         r"\(in module 1 \(AdaptiveMaxPool2d\)\)\. "
                                         r".* translates aten.adaptive_max_pool2d.default") as info:
        export_training_graph(module, (torch.randn(1, 1, 6, 6),), lambda o: o.sum())
    assert "\n" not in str(info.value)


# --- committed fixtures ----------------------------------------------------------------------


@pytest.mark.parametrize("fx", fixtures.FIXTURES, ids=lambda f: f.name)
def test_committed_fixture_is_current(fx):
    path = fixtures.path_of(fx.name)
    assert path.exists(), f"run python -m models.fixtures to create {path}"
    assert path.stat().st_size < fixtures.MAX_BYTES
    model = onnx.load(path)
    assert model.ir_version == IR_VERSION
    module, inputs, targets = fixtures.load_case(fx.name)
    if fx.inference:  # the forward only: input -> logits, equal to eager PyTorch's
        assert [i.name for i in model.graph.input] == ["input"]
        assert [o.name for o in model.graph.output] == ["logits"]
        assert [n.op_type for n in model.graph.node].count("Elu") == fx.n_elu
        import onnxruntime as ort

        from ort_ops.tolerances import check

        (got,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
            None, {"input": inputs[0].numpy()})
        module.eval()
        with torch.no_grad():
            want = module(*inputs).numpy()
        closeness = check(got, want.astype(np.float32))
        assert closeness.ok, closeness.message
        return
    assert [i.name for i in model.graph.input] == ["input", "target"]
    assert [o.name for o in model.graph.output] == ["loss"] + [
        GRAD_PREFIX + n for n in param_names(module)
    ]
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Elu") == ops.count("LessOrEqual") == fx.n_elu
    assert_matches_eager(model, module, inputs, fixtures.loss_fn, targets)


def _producers(model):
    return {o: n for n in model.graph.node for o in n.output}


def test_fixture_inplace_backward_reads_the_elu_output():
    model = onnx.load(fixtures.path_of("mlp_elu_inplace_fp32"))
    producers = _producers(model)
    for node in model.graph.node:
        if node.op_type == "LessOrEqual":
            assert producers[node.input[0]].op_type == "Elu"


def test_fixture_fp16_backward_is_cast_wrapped_fp32():
    model = onnx.load(fixtures.path_of("mlp_elu_fp16"))
    producers = _producers(model)
    consumers = {}
    for n in model.graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    wheres = 0
    for node in model.graph.node:
        if node.op_type == "LessOrEqual":
            cast = producers[node.input[0]]
            assert cast.op_type == "Cast" and cast.attribute[0].i == onnx.TensorProto.FLOAT
            where = next(c for c in consumers[node.output[0]] if c.op_type == "Where")
            (back,) = consumers[where.output[0]]
            assert back.op_type == "Cast" and back.attribute[0].i == onnx.TensorProto.FLOAT16
            wheres += 1
    assert wheres == 2
