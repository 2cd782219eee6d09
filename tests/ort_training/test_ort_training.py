"""ORT's own training stack with the op library: ELU models through generate_artifacts and
onnxruntime.training.api (ort_ops.ort_training), checked against PyTorch eager."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ort_ops.domain import DOMAIN

STEPS = 50
RTOL = 1e-5
# (the Elu's alpha attribute or None for ONNX's default 1.0): every branch of the alpha copy
ALPHAS = (0.7, None, 2.5)
BATCH, SIZES = 8, (4, 6, 5, 3)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def forward_model() -> tuple[onnx.ModelProto, dict]:
    """X -> (MatMul, Add, Elu(alpha_i)) x 3 -> Y, float32; no ai.ortops import (added by
    ort_ops.ort_training). Returns the model and its initial parameters."""
    rng = np.random.default_rng(0)
    params, nodes, x = {}, [], "X"
    for i, (n_in, n_out) in enumerate(zip(SIZES, SIZES[1:])):
        params[f"W{i}"] = rng.normal(0, 0.6, (n_in, n_out)).astype(np.float32)
        params[f"b{i}"] = rng.normal(0, 0.1, (n_out,)).astype(np.float32)
        y = "Y" if i == len(SIZES) - 2 else f"h{i}"
        nodes += [helper.make_node("MatMul", [x, f"W{i}"], [f"mm{i}"], name=f"mm{i}"),
                  helper.make_node("Add", [f"mm{i}", f"b{i}"], [f"z{i}"], name=f"add{i}")]
        kw = {} if ALPHAS[i] is None else {"alpha": ALPHAS[i]}
        nodes.append(helper.make_node("Elu", [f"z{i}"], [y], name=f"elu{i}", **kw))
        x = y
    graph = helper.make_graph(nodes, "elu_mlp", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [BATCH, 4])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [BATCH, 3])],
                              [numpy_helper.from_array(a, n) for n, a in params.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model, params


def batches():
    rng = np.random.default_rng(1)
    return [(rng.normal(0, 1.5, (BATCH, 4)).astype(np.float32), rng.normal(0, 1, (BATCH, 3)).astype(np.float32))
            for _ in range(STEPS)]


def torch_losses(params, optimizer: str, lr: float) -> list[float]:
    """The same MLP in PyTorch eager: F.elu, F.mse_loss; SGD = torch.optim.SGD; AdamW = ORT's
    AdamWOptimizer (adam_mode 1, Hugging Face's: the bias corrections scale the step size, eps is
    added to sqrt(v) uncorrected; betas 0.9/0.999, eps 1e-6, no weight decay) written in torch."""
    import torch

    torch.manual_seed(0)
    p = {n: torch.tensor(a, dtype=torch.float32, requires_grad=True) for n, a in params.items()}
    alphas = [1.0 if a is None else a for a in ALPHAS]
    m = {n: torch.zeros_like(t) for n, t in p.items()}
    v = {n: torch.zeros_like(t) for n, t in p.items()}
    sgd = torch.optim.SGD(p.values(), lr=lr) if optimizer == "SGD" else None
    losses = []
    for step, (x, target) in enumerate(batches(), start=1):
        h = torch.from_numpy(x)
        for i in range(len(SIZES) - 1):
            h = torch.nn.functional.elu(h @ p[f"W{i}"] + p[f"b{i}"], alpha=alphas[i])
        loss = torch.nn.functional.mse_loss(h, torch.from_numpy(target))
        losses.append(float(loss.detach()))
        for t in p.values():
            t.grad = None
        loss.backward()
        if sgd is not None:
            sgd.step()
            continue
        with torch.no_grad():
            b1, b2, eps = 0.9, 0.999, 1e-6
            step_size = lr * (1 - b2**step) ** 0.5 / (1 - b1**step)
            for n, t in p.items():
                m[n].mul_(b1).add_(t.grad, alpha=1 - b1)
                v[n].mul_(b2).addcmul_(t.grad, t.grad, value=1 - b2)
                t.sub_(step_size * m[n] / (v[n].sqrt() + eps))
    return losses


@pytest.fixture(scope="module")
def ot():
    import onnxruntime

    onnxruntime.set_default_logger_severity(3)  # onnxblock's graph transformer notes
    from ort_ops import ort_training

    ort_training.register_gradients()
    ort_training.register_gradients()  # idempotent
    return ort_training


def make_artifacts(ot, tmp_path, optimizer):
    from onnxruntime.training import artifacts

    model, params = forward_model()
    ot.generate_artifacts(model, requires_grad=list(params), loss=artifacts.LossType.MSELoss,
                          optimizer=getattr(artifacts.OptimType, optimizer), artifact_directory=tmp_path)
    return model, params


def test_elu_needs_the_registration(tmp_path):
    """Without register_gradients ORT-training has no Elu gradient (the reason for the module)."""
    code = textwrap.dedent(f"""
        import onnxruntime; onnxruntime.set_default_logger_severity(3)
        from onnxruntime.training import artifacts
        from test_ort_training import forward_model
        model, params = forward_model()
        artifacts.generate_artifacts(model, requires_grad=list(params), loss=artifacts.LossType.MSELoss,
                                     artifact_directory={str(tmp_path)!r})
    """)
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, ROOT, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode != 0, "generate_artifacts on an Elu model worked without the registration"
    assert "The gradient builder has not been registered: Elu" in proc.stderr, proc.stderr[-2000:]


def test_artifacts_have_elu_grad_with_each_alpha(ot, tmp_path):
    make_artifacts(ot, tmp_path, "AdamW")
    training = onnx.load(tmp_path / "training_model.onnx")
    grads = [n for n in training.graph.node if (n.domain, n.op_type) == (DOMAIN, "EluGrad")]
    producers = {o: n for n in training.graph.node for o in n.output}
    got = sorted((producers[n.input[1]].name, next(a.f for a in n.attribute if a.name == "alpha")) for n in grads)
    want = sorted((f"elu{i}", np.float32(1.0 if a is None else a)) for i, a in enumerate(ALPHAS))
    assert got == want, f"EluGrad (forward Elu, alpha): got {got}, expected {want}"
    assert any(o.domain == DOMAIN for o in training.opset_import), "training model does not import ai.ortops"


@pytest.mark.parametrize("optimizer,lr", [("SGD", 0.05), ("AdamW", 0.01)])
def test_training_api_matches_torch(ot, tmp_path, optimizer, lr):
    _, params = make_artifacts(ot, tmp_path, optimizer)
    _, module, optim = ot.load_training(tmp_path)
    optim.set_learning_rate(lr)
    module.train()
    losses = []
    for x, target in batches():
        losses.append(float(module(x, target)))
        optim.step()
        module.lazy_reset_grad()
    expected = torch_losses(params, optimizer, lr)
    np.testing.assert_allclose(losses, expected, rtol=RTOL, atol=0,
                               err_msg=f"{optimizer}: ORT-training losses vs PyTorch eager")
    assert expected[-1] < 0.8 * expected[0], f"{optimizer}: the loss did not fall: {expected[0]} -> {expected[-1]}"


def test_reverse_route_trainer_matches_torch(ot, tmp_path):
    """Forward ONNX model -> artifacts -> to_trainer_graph -> ort_ops.training.Trainer (SGD)."""
    from ort_ops.training import SGD, Trainer

    model, params = make_artifacts(ot, tmp_path, "SGD")
    graph = ot.to_trainer_graph(tmp_path / "training_model.onnx")
    assert [o.name for o in graph.graph.output] == ["loss"] + [f"grad.{p}" for p in params]
    start = ot.initial_parameters(model, list(params))
    for name, value in params.items():
        np.testing.assert_array_equal(start[name], value)
    domains = {n.domain for n in graph.graph.node}
    assert domains <= {"", DOMAIN}, f"ORT-training-only ops left in the Trainer graph: {domains}"
    trainer = Trainer(graph, start, SGD(lr=0.05), progress=False)
    losses = [trainer.step(batch) for batch in batches()]
    np.testing.assert_allclose(losses, torch_losses(params, "SGD", 0.05), rtol=RTOL, atol=0,
                               err_msg="Trainer on the converted ORT-training graph vs PyTorch eager")


MAIN_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")  # the main environment: plain onnxruntime


@pytest.mark.skipif(not os.path.isfile(MAIN_PYTHON), reason=f"no main environment ({MAIN_PYTHON}; scripts/setup.sh)")
def test_reverse_route_runs_on_plain_onnxruntime(ot, tmp_path):
    """The converted graph trains in the main environment (plain onnxruntime, no training ops)."""
    model, params = make_artifacts(ot, tmp_path, "SGD")
    onnx.save(ot.to_trainer_graph(tmp_path / "training_model.onnx"), tmp_path / "trainer.onnx")
    np.savez(tmp_path / "params.npz", **ot.initial_parameters(model, list(params)))
    np.savez(tmp_path / "batches.npz", *[a for batch in batches() for a in batch])
    code = textwrap.dedent(f"""
        import numpy as np, onnx, onnxruntime
        from ort_ops.training import SGD, Trainer
        assert not hasattr(onnxruntime.capi._pybind_state, "register_gradient_definition"), "a training build"
        d = {str(tmp_path)!r}
        params = dict(np.load(d + "/params.npz"))
        flat = np.load(d + "/batches.npz"); flat = [flat[f"arr_{{i}}"] for i in range(len(flat.files))]
        trainer = Trainer(onnx.load(d + "/trainer.onnx"), params, SGD(lr=0.05), progress=False)
        np.save(d + "/losses.npy", np.array([trainer.step(flat[i:i + 2]) for i in range(0, len(flat), 2)]))
        print(onnxruntime.__version__)
    """)
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([MAIN_PYTHON, "-c", code], capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    np.testing.assert_allclose(np.load(tmp_path / "losses.npy"), torch_losses(params, "SGD", 0.05), rtol=RTOL,
                               atol=0, err_msg=f"Trainer on onnxruntime {proc.stdout.strip()} vs PyTorch eager")


def test_elu_grad_without_an_elu_is_named(ot):
    node = helper.make_node("EluGrad", ["dy", "a"], ["dx"], name="lonely", domain=DOMAIN)
    relu = helper.make_node("Relu", ["x"], ["a"], name="r")
    graph = helper.make_graph([relu, node], "g", [], [])
    with pytest.raises(ValueError, match=r"EluGrad node 'lonely'.*\['a'\].*::Relu"):
        ot.set_elu_grad_alphas(helper.make_model(graph))


def test_runtime_check_sees_the_training_wheel():
    from ort_ops.runtime_check import check_onnxruntime, installed_wheels

    found = installed_wheels()
    assert set(found) == {"onnxruntime-training-cpu"}, f"ONNX Runtime wheels found here: {found}"
    check_onnxruntime()  # one wheel: no error
