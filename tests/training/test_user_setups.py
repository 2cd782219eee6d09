"""Users' setups (models/user_setups.py): export, fuse and train 20 steps in ORT on the CPU EP
against PyTorch eager with the same optimizer.

Expected values come from PyTorch alone (eager forward, autograd, torch.optim), never from the
code under test. float32: per-step losses within 1e-5 relative, parameters (and module buffers
such as BatchNorm's running statistics) within 1e-5 normwise (``||got - want|| <= 1e-5 ||want||``)
after 20 steps. float16 (every setup: PyTorch trains each in float16 on the CPU), SGD: see
FLOAT16_TOLERANCE.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from models import user_setup_fixtures
from models.user_setups import SETUPS, Setup
from ort_ops import rewrite, training
from ort_ops.training.dropout import DropoutMasks
from ort_ops.training.trainer import SGD, Adam, Trainer
from ort_ops.training.verify import to_numpy

N_STEPS = 20
RTOL = 1e-5
# float16: ORT and PyTorch round different intermediate sums to float16 (e.g. a GEMM's
# accumulation; the unfused float16 update rounds lr * grad before subtracting, where torch.optim
# rounds once), so steps drift apart by a few float16 ulps (2**-10 = 9.8e-4 relative): measured
# ~1e-3 over 20 steps on every setup here
FLOAT16_TOLERANCE = 5e-3

def optimizers(setup: Setup, name: str):
    """(ours, PyTorch's factory) for optimizer ``name``, with the setup's hyperparameters."""
    if name == "sgd":
        return SGD(lr=0.05, momentum=0.9), lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)
    eps = setup.adam_eps
    return Adam(lr=1e-2, eps=eps), lambda p: torch.optim.Adam(p, lr=1e-2, eps=eps)


OPTIMIZERS = ("sgd", "adam")


def _cast(batch, dtype):
    return tuple(t.to(dtype) if t.is_floating_point() else t for t in batch)


def eager_run(setup: Setup, make_opt, dtype=torch.float32, steps: int = N_STEPS, masks=lambda step: {}):
    """PyTorch's own training: losses per step, then parameters and buffers after ``steps``.
    ``masks(step)``: the dropout masks of 1-based step ``step`` (what the trainer fed), replayed."""
    module = setup.build().to(dtype).train()
    opt = make_opt(module.parameters())
    losses = []
    for step in range(steps):
        inputs, targets = setup.batch(step)
        opt.zero_grad()
        with DropoutMasks(masks(step + 1)):
            loss = setup.loss(module(*_cast(inputs, dtype)), *_cast(targets, dtype))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    params = {n: to_numpy(p) for n, p in module.named_parameters()}
    buffers = {n: to_numpy(b) for n, b in module.named_buffers()}
    return losses, params, buffers


def export(setup: Setup, dtype=torch.float32):
    """The setup's fused training graph and its initial parameters (from a fresh build)."""
    module = setup.build()
    inputs, targets = setup.batch(0)
    kwargs = {} if dtype == torch.float32 else {"dtype": dtype}
    graph = training.export_training_graph(module, inputs, setup.loss, targets=targets,
                                           params_as_inputs=True, **kwargs)
    fused = rewrite.fuse_training(graph)
    params = {n: to_numpy(p.to(dtype)) for n, p in setup.build().named_parameters()}
    return graph, fused, params


def ort_batches(setup: Setup, dtype, steps: int = N_STEPS):
    out = []
    for step in range(steps):
        inputs, targets = setup.batch(step)
        out.append(tuple(to_numpy(t) for t in _cast(inputs + targets, dtype)))
    return out


def normwise_error(got: np.ndarray, want: np.ndarray) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    scale = np.linalg.norm(want)
    return float(np.linalg.norm(got - want) / (scale if scale > 0 else 1.0))


def assert_matches(name: str, losses, trainer, want, tol: float):
    """Per-step losses, parameters and module buffers (BatchNorm's running statistics; integer
    counters exactly) of ``trainer`` against PyTorch's ``want``."""
    want_losses, want_params, want_buffers = want
    np.testing.assert_allclose(losses, want_losses, rtol=tol, atol=0, err_msg=f"{name}: per-step losses")
    params, buffers = trainer.parameters(), trainer.buffers()
    assert sorted(params) == sorted(want_params)
    bad = {n: e for n in want_params if (e := normwise_error(params[n], want_params[n])) > tol}
    assert not bad, f"{name}: parameters off after {N_STEPS} steps (normwise error > {tol}): {bad}"
    assert sorted(buffers) == sorted(want_buffers), f"{name}: buffers carried as state"
    for n, b in want_buffers.items():
        if b.dtype.kind in "iu":
            assert buffers[n].tolist() == b.tolist(), f"{name}: buffer {n}"
        else:
            assert normwise_error(buffers[n], b) <= tol, f"{name}: buffer {n} off by {normwise_error(buffers[n], b)}"


@pytest.fixture(scope="module")
def exported():
    cache = {}

    def get(setup: Setup, dtype=torch.float32):
        key = (setup.name, dtype)
        if key not in cache:
            cache[key] = export(setup, dtype)
        return cache[key]
    return get


@pytest.mark.parametrize("setup", SETUPS, ids=lambda s: s.name)
def test_setup_exports_and_fuses_its_elu_backward(exported, setup):
    graph, fused, _ = exported(setup)
    assert "EluGrad" in {n.op_type for n in fused.graph.node}, f"{setup.name}: no ELU backward fused"
    assert len(fused.graph.node) < len(graph.graph.node)


@pytest.mark.parametrize("opt_name", OPTIMIZERS)
@pytest.mark.parametrize("setup", SETUPS, ids=lambda s: s.name)
def test_training_matches_pytorch(exported, setup, opt_name):
    ours, theirs = optimizers(setup, opt_name)
    _, fused, params = exported(setup)
    trainer = Trainer(fused, params, ours, progress=False)
    losses = trainer.fit(ort_batches(setup, torch.float32))
    want = eager_run(setup, theirs, masks=trainer.dropout_masks_for_step)
    assert_matches(setup.name, losses, trainer, want, RTOL)


@pytest.mark.parametrize("setup", SETUPS, ids=lambda s: s.name)
def test_float16_training_matches_pytorch(exported, setup):
    ours, theirs = optimizers(setup, "sgd")
    _, fused, params = exported(setup, torch.float16)
    trainer = Trainer(fused, params, ours, progress=False)
    losses = trainer.fit(ort_batches(setup, torch.float16))
    want = eager_run(setup, theirs, torch.float16, masks=trainer.dropout_masks_for_step)
    assert_matches(setup.name, losses, trainer, want, setup.float16_tolerance or FLOAT16_TOLERANCE)


def test_docs_table_is_current():
    from models.user_setups import MARKDOWN_BEGIN, MARKDOWN_END, markdown

    text = (Path(__file__).resolve().parents[2] / "docs" / "bring-your-own-model.md").read_text()
    start, end = text.find(MARKDOWN_BEGIN), text.find(MARKDOWN_END)
    assert 0 <= start < end, "docs/bring-your-own-model.md lacks the user-setups table markers"
    assert text[start:end + len(MARKDOWN_END)] + "\n" == markdown(), \
        "docs/bring-your-own-model.md's setups table is stale: python -m models.user_setups prints it"


def _signature(model):
    def io(values):
        return [(v.name, v.type.tensor_type.elem_type, [d.dim_value for d in v.type.tensor_type.shape.dim])
                for v in values]
    return [n.op_type for n in model.graph.node], io(model.graph.input), io(model.graph.output)


@pytest.mark.parametrize("setup", SETUPS, ids=lambda s: s.name)
def test_committed_fixture_is_current(exported, setup):
    """tests/fixtures/user_setups (what the CANN suite trains, without PyTorch) is what the setup
    exports today, with its initial parameters, buffers and batches
    (.venv/bin/python -m models.fixtures --user-setups NAME rewrites it)."""
    fx = user_setup_fixtures.load(setup.name)
    graph, _, params = exported(setup)
    assert _signature(fx.graph) == _signature(graph)
    module = setup.build()
    assert sorted(fx.params) == sorted(params)
    for n, p in params.items():
        np.testing.assert_array_equal(fx.params[n], p, err_msg=n)
    assert {n: to_numpy(b).tolist() for n, b in module.named_buffers()} == \
        {n: b.tolist() for n, b in fx.buffers.items()}
    assert len(fx.batches) == user_setup_fixtures.N_BATCHES
    for step, arrays in enumerate(fx.batches):
        inputs, targets = setup.batch(step)
        assert len(arrays) == len(inputs + targets)
        for got, want in zip(arrays, inputs + targets):
            np.testing.assert_array_equal(got, to_numpy(want))
    assert fx.cann_refused == setup.cann_refused
    assert fx.adam_eps == setup.adam_eps


def test_float16_adam_with_an_eps_that_rounds_to_zero_is_refused(exported):
    from models.user_setups import BY_NAME

    _, fused, params = exported(BY_NAME["cat_chunk"], torch.float16)
    with pytest.raises(ValueError, match=r"Adam eps = 1e-08 rounds to 0 in float16"):
        Trainer(fused, params, Adam(lr=1e-2), progress=False)
