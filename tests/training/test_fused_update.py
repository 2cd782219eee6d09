"""The trainer's fused optimizer update (``ai.ortops::SGDUpdate`` / ``AdamUpdate``, the default for
float32 parameters) on the CPU EP: PyTorch's parameters after 30+ steps for every SGD and Adam
variant (the tolerances of tests/training/test_training.py), bit for bit the unfused update graph,
``set_learning_rate`` against PyTorch with a changed lr, checkpoints (the scalar state stored with
them), a skipped non-finite step that does not advance the scalars, float64 parameters
on the unfused graph."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F

from models.zoo import elu_mlp, example_batch
from ort_ops import rewrite, training
from ort_ops.domain import DOMAIN
from ort_ops.training.trainer import SGD, Adam, CheckpointError, Trainer, load_checkpoint_arrays
from ort_ops.training.verify import TOLERANCES, compare_all, to_numpy

BATCH = 16
N_STEPS = 32
RTOL, ATOL = TOLERANCES[torch.float32]


def _mlp(dtype=torch.float32):
    return elu_mlp(alpha=0.7, seed=3).to(dtype)


@pytest.fixture(scope="module")
def graph() -> onnx.ModelProto:
    x, y = example_batch("mlp", BATCH)
    unfused = training.export_training_graph(_mlp(), (x,), F.cross_entropy, targets=(y,), params_as_inputs=True,
                                             verify=False)
    return rewrite.fuse_elu_grad(unfused)


def _init(dtype=torch.float32) -> dict[str, np.ndarray]:
    return {n: to_numpy(p) for n, p in _mlp(dtype).named_parameters()}


def _batches(n=N_STEPS, dtype=torch.float32):
    return [tuple(t.to(dtype) if t.is_floating_point() else t for t in example_batch("mlp", BATCH, seed=200 + i))
            for i in range(n)]


def _np(batch):
    return tuple(t.numpy() for t in batch)


def _torch_train(make_opt, batches, lr_at=None, dtype=torch.float32, module=None):
    """PyTorch's training; ``lr_at = (step, lr)`` sets the learning rate before that step (0-based)."""
    module = _mlp(dtype) if module is None else module
    opt = make_opt(module.parameters())
    losses = []
    for i, (x, y) in enumerate(batches):
        if lr_at is not None and i == lr_at[0]:
            for group in opt.param_groups:
                group["lr"] = lr_at[1]
        opt.zero_grad()
        loss = F.cross_entropy(module(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {n: to_numpy(p) for n, p in module.named_parameters()}, losses


OPTIMIZERS = {
    "sgd-plain": (SGD(lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
    "sgd-weight-decay": (SGD(lr=0.1, weight_decay=1e-2), lambda p: torch.optim.SGD(p, lr=0.1, weight_decay=1e-2)),
    "sgd-momentum": (SGD(lr=0.05, momentum=0.9), lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)),
    "sgd-momentum-wd": (SGD(lr=0.05, momentum=0.8, weight_decay=1e-2),
                        lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, weight_decay=1e-2)),
    "sgd-dampening": (SGD(lr=0.05, momentum=0.9, dampening=0.3),
                      lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.3)),
    "sgd-dampening-wd": (SGD(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=1e-2),
                         lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.3, weight_decay=1e-2)),
    "sgd-nesterov": (SGD(lr=0.05, momentum=0.9, nesterov=True),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True)),
    "sgd-nesterov-wd": (SGD(lr=0.05, momentum=0.8, weight_decay=1e-2, nesterov=True),
                        lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, weight_decay=1e-2, nesterov=True)),
    "adam": (Adam(lr=1e-2), lambda p: torch.optim.Adam(p, lr=1e-2)),
    "adam-wd": (Adam(lr=1e-2, weight_decay=1e-2), lambda p: torch.optim.Adam(p, lr=1e-2, weight_decay=1e-2)),
    "adam-wd-betas": (Adam(lr=3e-3, betas=(0.8, 0.99), eps=1e-6, weight_decay=1e-2),
                      lambda p: torch.optim.Adam(p, lr=3e-3, betas=(0.8, 0.99), eps=1e-6, weight_decay=1e-2)),
}


def _assert_close(got: dict, want: dict, what: str):
    report = compare_all(got, want, RTOL, ATOL)
    assert report.ok, f"{what}:\n{report}"


def _fused_ops(trainer) -> list[str]:
    return [n.op_type for n in trainer.step_graph.graph.node if n.domain == DOMAIN and n.op_type.endswith("Update")]


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_fused_update_matches_pytorch_over_32_steps(graph, name):
    ours, make_torch = OPTIMIZERS[name]
    batches = _batches()
    trainer = Trainer(graph, _init(), ours, progress=False)
    assert trainer.fused and _fused_ops(trainer) == [ours.fused_op] * len(trainer.names)
    assert not set(ours.scalar_names) & {i.name for i in trainer.step_graph.graph.input}  # nothing fed per step
    losses = trainer.fit([_np(b) for b in batches])
    want_params, want_losses = _torch_train(make_torch, batches)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    _assert_close(trainer.parameters(), want_params, f"{name} after {N_STEPS} steps")


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_fused_trainer_equals_the_unfused_trainer_bit_for_bit(graph, name):
    opt = OPTIMIZERS[name][0]
    batches = [_np(b) for b in _batches()]
    fused = Trainer(graph, _init(), opt, progress=False)
    unfused = Trainer(graph, _init(), opt, progress=False, fused_update=False)
    assert fused.fused and not unfused.fused and not _fused_ops(unfused)
    assert fused.fit(batches) == unfused.fit(batches)
    for kind in ("parameters", "optimizer_state"):
        want = getattr(unfused, kind)()
        for k, a in getattr(fused, kind)().items():
            np.testing.assert_array_equal(a, want[k], err_msg=f"{kind} {k}")


@pytest.mark.parametrize("name", ["sgd-momentum", "sgd-plain", "adam", "adam-wd-betas"])
def test_set_learning_rate_matches_pytorch(graph, name):
    ours, make_torch = OPTIMIZERS[name]
    batches = _batches()
    new_lr = ours.lr * 0.3
    trainer = Trainer(graph, _init(), ours, progress=False)
    losses = trainer.fit([_np(b) for b in batches[:12]])
    trainer.set_learning_rate(new_lr)
    assert trainer.optimizer.lr == new_lr and ours.lr != new_lr  # the caller's optimizer is not changed
    losses += trainer.fit([_np(b) for b in batches[12:]])
    want_params, want_losses = _torch_train(make_torch, batches, lr_at=(12, new_lr))
    _, unchanged = _torch_train(make_torch, batches)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    assert not np.allclose(want_losses[13:], unchanged[13:], rtol=1e-5)  # the change mattered
    _assert_close(trainer.parameters(), want_params, f"{name} with lr {new_lr} from step 13")
    np.testing.assert_array_equal(trainer._current()[ours.scalars_name].numpy(),
                                  trainer.optimizer.scalar_state(N_STEPS))
    assert trainer._current()[ours.scalars_name].numpy()[0] == np.array(new_lr, trainer._current()[
        ours.scalars_name].numpy().dtype)


def test_set_learning_rate_equals_the_unfused_trainer_bit_for_bit(graph):
    batches = [_np(b) for b in _batches(20)]
    trainers = [Trainer(graph, _init(), Adam(lr=1e-2), progress=False, fused_update=f) for f in (True, False)]
    for t in trainers:
        t.fit(batches[:7])
        t.set_learning_rate(2e-3)
        t.fit(batches[7:])
    for k, a in trainers[0].parameters().items():
        np.testing.assert_array_equal(a, trainers[1].parameters()[k], err_msg=k)


@pytest.mark.parametrize("bad, why", [
    (-0.1, r"lr must be a finite number >= 0 \(the learning rate\), got -0.1"),
    (math.nan, "lr must be a finite number >= 0 .*got nan"), (math.inf, "lr must be .*got inf"),
    (True, "lr must be .*got True"), ("0.1", "lr must be .*got '0.1' .str."), (None, "lr must be .*got None"),
    # the float32 update graph cannot hold them (issue 19 item 11)
    (1e39, r"lr = 1e\+39 overflows float32 \(largest 3.40282"), (1e-50, "lr = 1e-50 rounds to 0 in float32"),
])
@pytest.mark.parametrize("name", ["sgd", "adam"])
def test_set_learning_rate_rejects_bad_values_and_changes_nothing(graph, bad, why, name):
    opt = SGD(lr=0.1, momentum=0.9) if name == "sgd" else Adam(lr=0.1)
    trainer = Trainer(graph, _init(), opt, progress=False)
    trainer.fit([_np(b) for b in _batches(2)])
    before = trainer._current()[opt.scalars_name].numpy().copy()
    with pytest.raises(ValueError, match=f"{type(opt).__name__} {why}"):
        trainer.set_learning_rate(bad)
    assert trainer.optimizer.lr == 0.1
    np.testing.assert_array_equal(trainer._current()[opt.scalars_name].numpy(), before)


@pytest.mark.parametrize("split", [9, 14])  # odd and even: the value sets swap on resume
@pytest.mark.parametrize("name", ["sgd-momentum", "adam"])
def test_checkpoint_after_a_learning_rate_change_resumes_exactly(graph, tmp_path, name, split):
    opt = OPTIMIZERS[name][0]
    batches = [_np(b) for b in _batches(24)]
    straight = Trainer(graph, _init(), opt, progress=False)
    straight.fit(batches[:5])
    straight.set_learning_rate(opt.lr / 4)
    straight.fit(batches[5:])

    first = Trainer(graph, _init(), opt, progress=False)
    first.fit(batches[:5])
    first.set_learning_rate(opt.lr / 4)
    first.fit(batches[5:split])
    path = tmp_path / "ckpt.npz"
    first.save_checkpoint(path)
    meta, _, state = load_checkpoint_arrays(path)
    assert meta["optimizer"]["lr"] == opt.lr / 4
    # the fused graph's scalar states in meta (the lr changed too), not among the state arrays
    assert meta["scalars"][opt.scalars_name][0] == np.array(opt.lr / 4, opt.scalar_state(0).dtype)
    assert sorted(state) == sorted(first.optimizer_state()) and not any(k.endswith("scalars") for k in state)

    resumed = Trainer(graph, _init(), opt, progress=False)  # built with the original lr
    resumed.load_checkpoint(path)
    assert resumed.optimizer.lr == opt.lr / 4
    resumed.fit(batches[split:])
    for k, a in straight.parameters().items():
        np.testing.assert_array_equal(resumed.parameters()[k], a, err_msg=k)
    for k, a in straight.optimizer_state().items():
        np.testing.assert_array_equal(resumed.optimizer_state()[k], a, err_msg=k)
    np.testing.assert_array_equal(resumed._current()[opt.scalars_name].numpy(),
                                  straight._current()[opt.scalars_name].numpy())


def test_checkpoint_of_other_hyperparameters_is_still_rejected(graph, tmp_path):
    path = tmp_path / "ckpt.npz"
    Trainer(graph, _init(), SGD(lr=0.1, momentum=0.9), progress=False).save_checkpoint(path)
    trainer = Trainer(graph, _init(), SGD(lr=0.1, momentum=0.8), progress=False)
    with pytest.raises(CheckpointError, match="optimizer .* differs from the trainer"):
        trainer.load_checkpoint(path)
    assert trainer.optimizer.momentum == 0.8 and trainer.step_count == 0


def test_a_skipped_step_does_not_advance_the_scalars(graph):
    batches = [_np(b) for b in _batches(4)]
    x, y = batches[1]
    bad = (np.where(np.arange(x.size).reshape(x.shape) == 3, np.inf, x).astype(np.float32), y)
    for opt in (SGD(lr=0.05, momentum=0.9, dampening=0.5), Adam(lr=1e-2)):
        skipping = Trainer(graph, _init(), opt, progress=False, on_nonfinite="skip")
        skipping.fit([batches[0], bad, batches[2], batches[3]])
        clean = Trainer(graph, _init(), opt, progress=False)
        clean.fit([batches[0], batches[2], batches[3]])
        assert skipping.skipped_steps == 1 and skipping.step_count == 3
        np.testing.assert_array_equal(skipping._current()[opt.scalars_name].numpy(), opt.scalar_state(3))
        for k, a in clean.parameters().items():
            np.testing.assert_array_equal(skipping.parameters()[k], a, err_msg=k)


def _relu_mlp64():
    torch.manual_seed(4)  # (ONNX Runtime has no float64 Elu kernel)
    return torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10)).double()


def test_float64_parameters_keep_the_unfused_graph_and_follow_a_learning_rate_change():
    x, y = example_batch("mlp", BATCH)
    graph64 = training.export_training_graph(_relu_mlp64(), (x.double(),), F.cross_entropy, targets=(y,),
                                             params_as_inputs=True, verify=False)
    batches = _batches(12, torch.float64)
    init = {n: to_numpy(p) for n, p in _relu_mlp64().named_parameters()}
    for name in ("sgd-momentum", "adam"):
        ours, make_torch = OPTIMIZERS[name]
        trainer = Trainer(graph64, init, ours, progress=False)
        assert not trainer.fused and not _fused_ops(trainer)
        losses = trainer.fit([_np(b) for b in batches[:6]])
        trainer.set_learning_rate(ours.lr / 2)
        losses += trainer.fit([_np(b) for b in batches[6:]])
        want_params, want_losses = _torch_train(make_torch, batches, lr_at=(6, ours.lr / 2), dtype=torch.float64,
                                                module=_relu_mlp64())
        np.testing.assert_allclose(losses, want_losses, rtol=1e-12)
        report = compare_all(trainer.parameters(), want_params, *TOLERANCES[torch.float64])
        assert report.ok, f"{name} float64:\n{report}"
