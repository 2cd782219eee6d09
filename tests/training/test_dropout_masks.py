"""Reproducible dropout (ort_ops.training.dropout_masks / dropout): masks as graph inputs drawn
per (seed, step, site), the same step as PyTorch given the same masks, a resumed run that draws
what the uninterrupted one does, and p = 0 as the identity."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from ort_ops.training import SGD, Adam, Trainer, export_training_graph
from ort_ops.training import dropout_masks as mask_inputs
from ort_ops.training.dropout import DropoutMasks, masked
from ort_ops.training.verify import eager_loss_and_grads, feeds_for, run_ort, to_numpy

STEPS = 20


def _mlp(p1=0.3, p2=0.5, seed=0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.ELU(), nn.Dropout(p1), nn.Linear(16, 16), nn.ELU(),
                         nn.Dropout(p2), nn.Linear(16, 3))


def _batches(n=STEPS):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((8, 3))
    pairs = []
    for _ in range(4):
        x = rng.standard_normal((16, 8)).astype(np.float32)
        pairs.append((x, (x @ w).argmax(1).astype(np.int64)))
    return [pairs[i % 4] for i in range(n)]


def _graph(module, **kw):
    x, y = (torch.from_numpy(a) for a in _batches(1)[0])
    return export_training_graph(module, (x,), F.cross_entropy, targets=(y,), params_as_inputs=True, **kw)


@pytest.fixture(scope="module")
def graph():
    """The two-dropout MLP's training graph (verify=True: ORT and PyTorch given the same masks agree)."""
    return _graph(_mlp())


def _params(module):
    return {n: to_numpy(p) for n, p in module.named_parameters()}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9, 1.0])
def test_masked_is_native_dropout_given_its_mask(p, dtype):
    x = torch.randn(64, 33).to(dtype)
    out, mask = torch.ops.aten.native_dropout(x, p, True)
    assert torch.equal(masked(x, mask, p), out)  # bit for bit, zeros' signs included
    assert torch.equal(torch.signbit(masked(x, mask, p)), torch.signbit(out))


def test_draw_is_a_function_of_seed_step_and_site():
    sites = [mask_inputs.MaskSite("dropout_mask.0", 0.25, (64, 64)), mask_inputs.MaskSite("dropout_mask.1", 1.0, (3,))]
    a = mask_inputs.draw(sites, 7, 3)
    assert all(np.array_equal(a[k], v) for k, v in mask_inputs.draw(sites, 7, 3).items())
    assert not np.array_equal(a["dropout_mask.0"], mask_inputs.draw(sites, 7, 4)["dropout_mask.0"])
    assert not np.array_equal(a["dropout_mask.0"], mask_inputs.draw(sites, 8, 3)["dropout_mask.0"])
    assert a["dropout_mask.0"].dtype == bool and abs(a["dropout_mask.0"].mean() - 0.75) < 0.03
    assert not a["dropout_mask.1"].any()  # p = 1 drops everything
    with pytest.raises(ValueError, match="step must be an int >= 1, got 0"):
        mask_inputs.draw(sites, 7, 0)
    with pytest.raises(ValueError, match="dropout_seed must be an int >= 0, got -1"):
        mask_inputs.draw(sites, -1, 1)


def test_export_makes_one_bool_mask_input_per_dropout(graph):
    names = [i.name for i in graph.graph.input]
    assert names[:4] == ["input", "target", "dropout_mask.0", "dropout_mask.1"]
    sites = mask_inputs.sites(graph)
    assert [(s.p, s.shape) for s in sites] == [(0.3, (16, 16)), (0.5, (16, 16))]
    assert not [n for n in graph.graph.node if n.op_type == "Dropout"]
    onnx.checker.check_model(graph, full_check=True)


def test_dropout_masks_false_keeps_the_exporters_dropout():
    graph = _graph(_mlp(), dropout_masks=False, verify=False)
    assert [i.name for i in graph.graph.input][:3] == ["input", "target", "0.weight"]
    assert sum(n.op_type == "Dropout" for n in graph.graph.node) == 2
    assert mask_inputs.sites(graph) == []


def _torch_run(module, data, masks_of_step, make_opt):
    opt = make_opt(module.parameters())
    losses = []
    for step, (x, y) in enumerate(data, 1):
        opt.zero_grad()
        with DropoutMasks(masks_of_step(step)):
            loss = F.cross_entropy(module(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_twenty_steps_equal_pytorch_given_the_same_masks(graph, opt):
    ours, theirs = {"sgd": (lambda: SGD(lr=0.1, momentum=0.9), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
                    "adam": (lambda: Adam(lr=3e-3), lambda p: torch.optim.Adam(p, lr=3e-3))}[opt]
    module, data = _mlp(), _batches()
    trainer = Trainer(graph, _params(module), ours(), dropout_seed=11, progress=False)
    losses = np.array(trainer.fit(data))
    want = _torch_run(module, data, trainer.dropout_masks_for_step, theirs)
    assert np.all(np.abs(losses - want) <= 1e-5 * np.abs(want)), np.abs(losses - want) / want
    for name, p in module.named_parameters():
        got, ref = trainer.parameters()[name].astype(np.float64), to_numpy(p).astype(np.float64)
        assert np.linalg.norm(got - ref) <= 1e-5 * np.linalg.norm(ref), name
    # the masks are not all-ones: with other masks PyTorch's run differs
    other = _torch_run(_mlp(), data, lambda s: mask_inputs.draw(trainer.mask_sites, 12, s), theirs)
    assert np.max(np.abs(other - want)) > 1e-3


def test_resumed_run_draws_the_masks_of_the_uninterrupted_run(graph, tmp_path):
    data = _batches()
    whole = Trainer(graph, _params(_mlp()), SGD(lr=0.1, momentum=0.9), dropout_seed=5, progress=False)
    want = whole.fit(data)
    first = Trainer(graph, _params(_mlp()), SGD(lr=0.1, momentum=0.9), dropout_seed=5, progress=False)
    head = first.fit(data[:9])
    first.save_checkpoint(tmp_path / "ckpt.npz")
    resumed = Trainer(graph, _params(_mlp()), SGD(lr=0.1, momentum=0.9), progress=False)  # seed from the file
    resumed.load_checkpoint(tmp_path / "ckpt.npz")
    assert resumed.dropout_seed == 5
    assert head + resumed.fit(data[9:]) == want  # bit for bit
    for name, value in whole.parameters().items():
        np.testing.assert_array_equal(resumed.parameters()[name], value, err_msg=name)


def test_p_zero_is_the_identity_exactly():
    plain = _mlp(seed=3)
    plain[2], plain[5] = nn.Identity(), nn.Identity()
    zero = _mlp(0.0, 0.0, seed=3)
    x, y = (torch.from_numpy(a) for a in _batches(1)[0])
    g_zero, g_plain = _graph(zero), _graph(plain)
    assert [i.name for i in g_zero.graph.input] == [i.name for i in g_plain.graph.input]  # no mask inputs
    assert [n.op_type for n in g_zero.graph.node] == [n.op_type for n in g_plain.graph.node]
    got_zero = run_ort(g_zero, feeds_for(g_zero, zero, (x,), (y,)))
    got_plain = run_ort(g_plain, feeds_for(g_plain, plain, (x,), (y,)))
    eager_zero = eager_loss_and_grads(zero, (x,), F.cross_entropy, (y,))
    eager_plain = eager_loss_and_grads(plain, (x,), F.cross_entropy, (y,))
    for name in got_zero:
        np.testing.assert_array_equal(got_zero[name], got_plain[name], err_msg=name)
        assert torch.equal(eager_zero[name], eager_plain[name]), name  # PyTorch's p = 0 is the identity too


def test_replay_refuses_a_wrong_number_or_shape_of_masks():
    module = _mlp()
    x = torch.randn(16, 8)
    with pytest.raises(ValueError, match=r"dropout call 1 \(p=0.5, shape \[16, 16\]\) has no mask: 1 given"):
        with DropoutMasks([np.ones((16, 16), bool)]):
            module(x)
    with pytest.raises(ValueError, match=r"dropout call 0: mask has shape \[4, 16\], the input \[16, 16\]"):
        with DropoutMasks([np.ones((4, 16), bool)] * 2):
            module(x)
    with pytest.raises(ValueError, match="3 dropout masks given, 2 used"):
        with DropoutMasks([np.ones((16, 16), bool)] * 3):
            module(x)


def test_committed_dropout_fixture_is_current():
    from models import fixtures
    from ort_ops.training.verify import compare_with_eager

    model = onnx.load(fixtures.path_of(fixtures.DROPOUT.name))
    sites = mask_inputs.sites(model)
    assert [(s.name, s.p, s.shape) for s in sites] == [("dropout_mask.0", 0.2, (8, 32)),
                                                       ("dropout_mask.1", 0.1, (8, 16))]
    assert [i.name for i in model.graph.input] == ["input", "target", "dropout_mask.0", "dropout_mask.1"]
    module, inputs, targets = fixtures.load_case(fixtures.DROPOUT.name)
    masks = [torch.from_numpy(m) for m in mask_inputs.mask_list(mask_inputs.draw(sites, 2, 9), sites)]
    report = compare_with_eager(model, module, inputs, fixtures.loss_fn, targets, masks=masks)
    assert report.ok, str(report)
