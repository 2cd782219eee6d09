"""ort_ops.training.trainer: ORT training (fused and unfused ELU backward) against PyTorch, step for step."""

import os

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F

from models.zoo import elu_mlp, example_batch
from ort_ops import rewrite, training
from ort_ops.training.trainer import SGD, Adam, Trainer, check_training_graph, load_checkpoint_arrays
from ort_ops.training.verify import TOLERANCES, compare_all, to_numpy

BATCH = 16
N_STEPS = 20
RTOL, ATOL = TOLERANCES[torch.float32]


def _mlp():
    return elu_mlp(alpha=0.7, seed=3)  # non-default alpha: both EluGrad branches matter


@pytest.fixture(scope="module")
def graphs() -> dict[str, onnx.ModelProto]:
    x, y = example_batch("mlp", BATCH)
    unfused = training.export_training_graph(_mlp(), (x,), F.cross_entropy, targets=(y,),
                                           params_as_inputs=True, verify=False)
    fused = rewrite.fuse_elu_grad(unfused)
    assert "EluGrad" in {n.op_type for n in fused.graph.node}
    assert "EluGrad" not in {n.op_type for n in unfused.graph.node}
    return {"fused": fused, "unfused": unfused}


def _init() -> dict[str, np.ndarray]:
    return {n: to_numpy(p) for n, p in _mlp().named_parameters()}


def _batches(n=N_STEPS):
    return [example_batch("mlp", BATCH, seed=100 + i) for i in range(n)]


def _np(batch):
    return tuple(t.numpy() for t in batch)


def _assert_close(got: dict, want: dict, what: str):
    assert sorted(got) == sorted(want)
    report = compare_all(got, want, RTOL, ATOL)
    assert report.ok, f"{what}:\n{report}"


def _torch_train(make_opt, batches):
    module = _mlp()
    opt = make_opt(module.parameters())
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = F.cross_entropy(module(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {n: to_numpy(p) for n, p in module.named_parameters()}, losses


@pytest.mark.parametrize("kind", ["fused", "unfused"])
def test_first_step_gradients_match_autograd(graphs, kind):
    batch = _batches(1)[0]
    trainer = Trainer(graphs[kind], _init(), SGD(lr=0.1), progress=False)
    loss = trainer.step(_np(batch))
    module = _mlp()
    want_loss = F.cross_entropy(module(batch[0]), batch[1])
    want_loss.backward()
    assert abs(loss - want_loss.item()) <= ATOL + RTOL * abs(want_loss.item())
    _assert_close(trainer.gradients(), {n: to_numpy(p.grad) for n, p in module.named_parameters()}, "grad")


OPTIMIZERS = {
    "sgd-momentum": (SGD(lr=0.05, momentum=0.9),
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)),
    "sgd-nesterov-wd": (SGD(lr=0.05, momentum=0.8, weight_decay=1e-2, nesterov=True),
                        lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, weight_decay=1e-2, nesterov=True)),
    "sgd-dampening": (SGD(lr=0.05, momentum=0.9, dampening=0.3),
                      lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.3)),
    "sgd-plain": (SGD(lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
    "adam": (Adam(lr=1e-2), lambda p: torch.optim.Adam(p, lr=1e-2)),
    "adam-wd-betas": (Adam(lr=3e-3, betas=(0.8, 0.99), eps=1e-6, weight_decay=1e-2),
                      lambda p: torch.optim.Adam(p, lr=3e-3, betas=(0.8, 0.99), eps=1e-6, weight_decay=1e-2)),
}


# Every optimizer variant with the fused graph; the two main ones with the unfused graph too.
@pytest.mark.parametrize("kind, opt_name", [("fused", o) for o in OPTIMIZERS]
                         + [("unfused", "sgd-momentum"), ("unfused", "adam")])
def test_parameters_after_n_steps_match_pytorch(graphs, kind, opt_name):
    ours, make_torch = OPTIMIZERS[opt_name]
    batches = _batches()
    trainer = Trainer(graphs[kind], _init(), ours, progress=False)
    losses = trainer.fit([_np(b) for b in batches])
    want_params, want_losses = _torch_train(make_torch, batches)
    assert trainer.step_count == N_STEPS
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    _assert_close(trainer.parameters(), want_params, f"{opt_name} after {N_STEPS} steps:")


def test_pytorch_defaults():
    assert SGD() == SGD(lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False)
    assert Adam() == Adam(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    with pytest.raises(ValueError, match="nesterov"):
        SGD(momentum=0.0, nesterov=True)


def test_initial_parameters_are_not_modified(graphs):
    init = _init()
    before = {n: a.copy() for n, a in init.items()}
    Trainer(graphs["fused"], init, SGD(lr=0.1, momentum=0.9), progress=False).fit([_np(b) for b in _batches(3)])
    for n in init:
        np.testing.assert_array_equal(init[n], before[n])


@pytest.mark.parametrize("split", [7, 10])  # odd: the value sets are swapped on resume
@pytest.mark.parametrize("opt_name", ["sgd-momentum", "adam"])
def test_checkpoint_resume_equals_straight_through(graphs, tmp_path, split, opt_name):
    opt = OPTIMIZERS[opt_name][0]
    batches = [_np(b) for b in _batches()]
    straight = Trainer(graphs["fused"], _init(), opt, progress=False)
    straight.fit(batches)

    first = Trainer(graphs["fused"], _init(), opt, progress=False)
    first.fit(batches[:split])
    path = tmp_path / "ckpt.npz"
    first.save_checkpoint(path)
    assert os.listdir(tmp_path) == ["ckpt.npz"]  # no temporary file left behind
    meta, params, state = load_checkpoint_arrays(path)
    assert meta["step"] == split and sorted(params) == sorted(_init())
    assert len(state) == len(params) * len(opt.slots)

    resumed = Trainer(graphs["fused"], _init(), opt, progress=False)
    resumed.load_checkpoint(path)
    assert resumed.step_count == split
    resumed.fit(batches[split:])
    for n, a in straight.parameters().items():
        np.testing.assert_array_equal(resumed.parameters()[n], a)
    for k, a in straight.optimizer_state().items():
        np.testing.assert_array_equal(resumed.optimizer_state()[k], a)


def test_checkpoint_of_another_optimizer_is_rejected(graphs, tmp_path):
    path = tmp_path / "ckpt.npz"
    Trainer(graphs["fused"], _init(), SGD(lr=0.1, momentum=0.9), progress=False).save_checkpoint(path)
    with pytest.raises(ValueError, match="optimizer .* differs from the trainer"):
        Trainer(graphs["fused"], _init(), Adam(), progress=False).load_checkpoint(path)


# -- malformed training graphs fail before any step ---------------------------------------

def _drop_output(model, name):
    model = onnx.ModelProto.FromString(model.SerializeToString())
    keep = [o for o in model.graph.output if o.name != name]
    del model.graph.output[:]
    model.graph.output.extend(keep)
    return model


def test_missing_gradient_output(graphs):
    bad = _drop_output(graphs["fused"], "grad.net.2.bias")
    with pytest.raises(ValueError, match=r"no gradient output 'grad.net.2.bias' for parameter 'net.2.bias'"):
        Trainer(bad, _init(), SGD(), progress=False)


def test_missing_loss_output(graphs):
    bad = _drop_output(graphs["fused"], "loss")
    with pytest.raises(ValueError, match="no 'loss' output"):
        Trainer(bad, _init(), SGD(), progress=False)


def test_parameter_shape_mismatch(graphs):
    init = _init()
    init["net.0.weight"] = np.zeros((16, 64), np.float32)
    with pytest.raises(ValueError, match=r"'net.0.weight': the training graph expects shape \(32, 64\), "
                                         r"the initial value has shape \(16, 64\)"):
        Trainer(graphs["fused"], init, SGD(), progress=False)


def test_parameter_dtype_mismatch(graphs):
    init = _init()
    init["net.4.bias"] = init["net.4.bias"].astype(np.float64)
    with pytest.raises(ValueError, match="'net.4.bias': the training graph expects dtype float32"):
        check_training_graph(graphs["fused"], init)


def test_unknown_and_missing_parameters(graphs):
    init = _init()
    init["extra"] = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match="parameter 'extra' is not an input"):
        Trainer(graphs["fused"], init, SGD(), progress=False)
    init = _init()
    del init["net.4.weight"]
    with pytest.raises(ValueError, match=r"gradient outputs \['grad.net.4.weight'\] have no initial"):
        Trainer(graphs["fused"], init, SGD(), progress=False)


def test_parameters_as_initializers_are_rejected():
    x, y = example_batch("mlp", BATCH)
    graph = training.export_training_graph(_mlp(), (x,), F.cross_entropy, targets=(y,), verify=False)
    with pytest.raises(ValueError, match="params_as_inputs=True"):
        Trainer(graph, _init(), SGD(), progress=False)


def test_partial_batch_is_rejected_with_a_hint(graphs):
    trainer = Trainer(graphs["fused"], _init(), SGD(), progress=False)
    x, y = example_batch("mlp", BATCH - 3)
    with pytest.raises(ValueError, match=r"batch input 'input' has shape \(13, 64\).*drop the last partial"):
        trainer.step((x.numpy(), y.numpy()))
    assert trainer.step_count == 0
