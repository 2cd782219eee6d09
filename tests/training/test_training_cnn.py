"""The reference ELU CNN: exported training graph, fused ELU backward, ORT training on digits
8x8 images against PyTorch (first-step loss/gradients, parameters after N optimizer steps)."""

import os
from collections import Counter

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F

from models.train_digits import epoch_batches, load_digits
from models.zoo import IMAGE_SHAPE, elu_cnn
from ort_ops import rewrite, training
from ort_ops.training.trainer import SGD, Adam, Trainer
from ort_ops.training.verify import TOLERANCES, compare_all, to_numpy

pytest.importorskip("sklearn")

BATCH = 16
N_STEPS = 10
ALPHA = 0.7  # non-default alpha: both EluGrad branches and the alpha attribute matter
RTOL, ATOL = TOLERANCES[torch.float32]
N_ELU = 2  # conv1 -> ELU, conv2 -> ELU


def _cnn():
    return elu_cnn(alpha=ALPHA, seed=3)


@pytest.fixture(scope="module")
def digits_batches() -> list[tuple[np.ndarray, np.ndarray]]:
    """The first N_STEPS shuffled digits batches, images shaped [BATCH, 1, 8, 8], scaled like
    the digits demo (per-pixel standardised with the training split's statistics)."""
    x_tr, y_tr, _, _ = load_digits(0)
    images = x_tr.reshape(-1, *IMAGE_SHAPE)
    batches = epoch_batches(images, y_tr, BATCH, 0, 0)[:N_STEPS]
    assert len(batches) == N_STEPS and batches[0][0].shape == (BATCH, *IMAGE_SHAPE)
    return batches


@pytest.fixture(scope="module")
def graphs(digits_batches) -> dict[str, onnx.ModelProto]:
    x, y = (torch.from_numpy(a) for a in digits_batches[0])
    # verify=True: the export itself checks loss and gradients against eager autograd.
    unfused = training.export_training_graph(_cnn(), (x,), F.cross_entropy, targets=(y,),
                                           params_as_inputs=True)
    fused = rewrite.fuse_elu_grad(unfused)
    return {"fused": fused, "unfused": unfused}


def _ops(model) -> Counter:
    return Counter(n.op_type for n in model.graph.node)


def test_export_interface(graphs):
    names = [n for n, _ in _cnn().named_parameters()]
    for model in graphs.values():
        assert [i.name for i in model.graph.input] == ["input", "target", *names]
        assert [o.name for o in model.graph.output] == ["loss", *("grad." + n for n in names)]
        assert not model.graph.initializer or not {t.name for t in model.graph.initializer} & set(names)
    ops = _ops(graphs["unfused"])
    assert ops["Elu"] == N_ELU and ops["EluGrad"] == 0
    # conv1's input needs no gradient: only conv2 has a ConvTranspose (grad_input) node.
    assert ops["ConvTranspose"] == 1


def test_fusion_one_elu_grad_per_elu_no_remnants(graphs):
    unfused, fused = graphs["unfused"], graphs["fused"]
    report = rewrite.RewriteReport()
    rewrite.fuse_elu_grad(unfused, report=report)
    assert len(report.fused) == N_ELU and not [s for s in report.sites if s.status != "fused"]
    before, after = _ops(unfused), _ops(fused)
    assert after["Elu"] == N_ELU and after["EluGrad"] == N_ELU
    for node in fused.graph.node:
        if node.op_type == "EluGrad":
            assert node.domain == "ai.ortops"
            alpha = next(a.f for a in node.attribute if a.name == "alpha")
            assert alpha == pytest.approx(ALPHA)
    # PyTorch's ELU backward is Where(X <= 0, dY * alpha * exp(X), dY) per ELU: all of it goes.
    assert before["LessOrEqual"] == N_ELU and after["LessOrEqual"] == 0
    for op in ("Where", "Exp"):
        assert before[op] - after[op] == N_ELU, (op, before[op], after[op])
    # Structurally: each ELU's input X is read by its Elu only (no backward node reads it), and
    # each EluGrad reads the ELU's output.
    elu = [n for n in fused.graph.node if n.op_type == "Elu"]
    readers = Counter(i for n in fused.graph.node for i in n.input)
    assert all(readers[n.input[0]] == 1 for n in elu)
    elu_outputs = {n.output[0] for n in elu}
    assert all(n.input[1] in elu_outputs for n in fused.graph.node if n.op_type == "EluGrad")
    onnx.checker.check_model(fused, full_check=True)


def _init() -> dict[str, np.ndarray]:
    return {n: to_numpy(p) for n, p in _cnn().named_parameters()}


def _assert_close(got: dict, want: dict, what: str):
    assert sorted(got) == sorted(want)
    report = compare_all(got, want, RTOL, ATOL)
    assert report.ok, f"{what}:\n{report}"


def _torch_train(make_opt, batches):
    module = _cnn()
    opt = make_opt(module.parameters())
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = F.cross_entropy(module(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {n: to_numpy(p) for n, p in module.named_parameters()}, losses


@pytest.mark.parametrize("kind", ["fused", "unfused"])
def test_first_step_loss_and_gradients_match_autograd(graphs, digits_batches, kind):
    x, y = digits_batches[0]
    trainer = Trainer(graphs[kind], _init(), SGD(lr=0.1), progress=False)
    loss = trainer.step((x, y))
    module = _cnn()
    want_loss = F.cross_entropy(module(torch.from_numpy(x)), torch.from_numpy(y))
    want_loss.backward()
    assert abs(loss - want_loss.item()) <= ATOL + RTOL * abs(want_loss.item())
    grads = trainer.gradients()
    _assert_close(grads, {n: to_numpy(p.grad) for n, p in module.named_parameters()}, "grad")
    assert all(np.any(g != 0) for g in grads.values())  # every parameter really gets a gradient


OPTIMIZERS = {
    "sgd-momentum": (SGD(lr=0.05, momentum=0.9),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)),
    "adam": (Adam(lr=3e-3), lambda p: torch.optim.Adam(p, lr=3e-3)),
}


@pytest.mark.parametrize("kind", ["fused", "unfused"])
@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
def test_parameters_after_n_steps_match_pytorch(graphs, digits_batches, kind, opt_name):
    ours, make_torch = OPTIMIZERS[opt_name]
    trainer = Trainer(graphs[kind], _init(), ours, progress=False)
    losses = trainer.fit(digits_batches)
    want_params, want_losses = _torch_train(make_torch, digits_batches)
    assert trainer.step_count == N_STEPS
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    assert losses[-1] < losses[0]  # it is learning, not standing still
    _assert_close(trainer.parameters(), want_params, f"{opt_name} after {N_STEPS} steps:")


# -- the digits demo's CNN pieces (models.train_digits --model cnn) -------------------------

def test_demo_numpy_cnn_forward_matches_torch(digits_batches):
    from models.train_digits import accuracy, as_model_input, cnn_logits, logits

    x_flat = np.concatenate([b[0].reshape(BATCH, -1) for b in digits_batches[:2]])
    x = as_model_input(x_flat, "cnn")
    assert x.shape == (2 * BATCH, *IMAGE_SHAPE) and x.flags.c_contiguous
    assert as_model_input(x_flat, "mlp") is x_flat
    module = elu_cnn(alpha=1.0, seed=5)  # the demo's alpha
    params = {n: to_numpy(p) for n, p in module.named_parameters()}
    with torch.no_grad():
        want = module(torch.from_numpy(x)).double().numpy()
    got = cnn_logits(params, x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(logits(params, x), got)
    y = want.argmax(1)
    assert accuracy(params, x, y) == 1.0


def test_demo_config_and_artifacts_are_per_model(tmp_path, monkeypatch):
    from models import train_digits

    seen = {}
    monkeypatch.setattr(train_digits, "run_cpu", lambda args, data, files: seen.update(
        args=args, shape=data[0].shape, files=files) or 0)
    assert train_digits.main(["--model", "cnn", "--out-dir", str(tmp_path)]) == 0
    assert seen["shape"][1:] == IMAGE_SHAPE
    assert os.path.dirname(seen["files"]["graph"]) == str(tmp_path / "cnn")
    config = train_digits.config(seen["args"])
    assert config["model"] == "cnn" and config["channels"] == [8, 16] and "hidden" not in config
    assert train_digits.main(["--out-dir", str(tmp_path)]) == 0  # default: the MLP
    assert seen["shape"][1:] == (64,) and os.path.dirname(seen["files"]["graph"]) == str(tmp_path / "mlp")
