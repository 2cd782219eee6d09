"""Module buffers as training state: BatchNorm's running statistics in the training graph, the
trainer, checkpoints, the deployed model and the export report (issue 22, deliverables 1 and 4)."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper

from buffer_models import LOSSES, MODELS, STEPS, batches, normwise, train_eager
from ort_ops import rewrite
from ort_ops.training import (
    SGD,
    Adam,
    CheckpointError,
    Trainer,
    export_inference_graph,
    export_training_graph,
    initial_buffers,
    read_checkpoint,
)
from ort_ops.training.export_report import EXPORTER, TOOLKIT
from ort_ops.training.interface import buffer_state_names, new_name
from ort_ops.training.translations import CUSTOM_TRANSLATION_TABLE

BUFFERS = ["1.running_mean", "1.running_var", "1.num_batches_tracked"]
TOL = 1e-5  # the issue's: per-step loss relative, parameters and statistics normwise
LR = {"sgd": 0.05, "adam": 0.01}

# (model, mode, optimizer): BatchNorm2d and BatchNorm1d, train mode (running statistics updated)
# and eval mode (frozen statistics, parameters trained), SGD with momentum and Adam
CASES = [("conv", "train", "sgd"), ("mlp", "train", "adam"), ("conv", "eval", "adam"), ("mlp", "eval", "sgd")]


def _optimizer(kind: str):
    return SGD(lr=LR[kind], momentum=0.9) if kind == "sgd" else Adam(lr=LR[kind])


@pytest.fixture(scope="module")
def exported():
    """(kind, mode) -> (module, graph, report, the module's buffers before the export)."""
    out = {}
    for kind, mode in {(k, m) for k, m, _ in CASES}:
        module = MODELS[kind](mode)
        before = {n: b.clone() for n, b in module.named_buffers()}
        x, y = (torch.from_numpy(a) for a in batches(kind, 1)[0])
        graph, report = export_training_graph(module, (x,), LOSSES[kind], targets=(y,), params_as_inputs=True,
                                              report=True)
        out[kind, mode] = module, graph, report, before
    return out


def _params(module):
    return {n: p.detach() for n, p in module.named_parameters()}


def _check_against_eager(trainer, losses, eager, buffers):
    rel = np.abs(np.array(losses) - eager.losses) / np.abs(eager.losses)
    assert rel.max() <= TOL, f"per-step loss relative error {rel.max():.3g}"
    got = trainer.state_dict()
    assert sorted(trainer.buffers()) == sorted(buffers)
    for name in [*trainer.names, *buffers]:
        if np.issubdtype(eager.state[name].dtype, np.integer):
            assert got[name] == eager.state[name], name
            continue
        err = normwise(got[name], eager.state[name])
        assert err <= TOL, f"{name}: normwise error {err:.3g} after {STEPS} steps"


@pytest.mark.parametrize("kind,mode,opt", CASES, ids=["-".join(c) for c in CASES])
def test_training_with_batch_norm_matches_eager(exported, kind, mode, opt):
    module, graph, _, _ = exported[kind, mode]
    data = batches(kind)
    trainer = Trainer(graph, _params(module), _optimizer(opt), progress=False)
    losses = trainer.fit(data)
    eager = train_eager(module, kind, opt, data, LR[opt])
    state = BUFFERS if mode == "train" else []
    assert buffer_state_names(graph) == state
    _check_against_eager(trainer, losses, eager, state)
    if mode == "train":  # the statistics moved (a graph that left them alone would fail above too)
        assert eager.state["1.num_batches_tracked"] == 3 + STEPS


def test_unfused_update_and_fused_graph_carry_buffers(exported):
    module, graph, _, _ = exported["conv", "train"]
    fused = rewrite.fuse_training(graph)
    assert buffer_state_names(fused) == BUFFERS
    assert {"EluGrad", "SoftmaxCrossEntropyLossAndGrad"} <= {n.op_type for n in fused.graph.node}
    data = batches("conv")
    eager = train_eager(module, "conv", "sgd", data, LR["sgd"])
    for g, fused_update in ((fused, None), (graph, False)):
        trainer = Trainer(g, _params(module), _optimizer("sgd"), progress=False, fused_update=fused_update)
        _check_against_eager(trainer, trainer.fit(data), eager, BUFFERS)


def test_initial_buffers_are_the_modules_before_export(exported):
    module, graph, _, before = exported["conv", "train"]
    start = initial_buffers(graph)
    assert list(start) == BUFFERS
    for name, value in before.items():
        np.testing.assert_array_equal(start[name], value.numpy(), err_msg=name)
        np.testing.assert_array_equal(dict(module.named_buffers())[name].numpy(), value.numpy(), err_msg=name)
    # not the statistics of the copy after the export's own forward (one batch further)
    advanced = MODELS["conv"]("train")
    advanced(torch.from_numpy(batches("conv", 1)[0][0]))
    assert not np.allclose(start["1.running_mean"], advanced[1].running_mean.numpy())
    assert Trainer(graph, _params(module), _optimizer("sgd"), progress=False).buffers()["1.num_batches_tracked"] == 3


def test_eval_mode_graph_keeps_statistics_as_constants(exported):
    module, graph, report, before = exported["conv", "eval"]
    assert buffer_state_names(graph) == []
    inits = {t.name: numpy_helper.to_array(t) for t in graph.graph.initializer}
    for name in ("1.running_mean", "1.running_var"):
        np.testing.assert_array_equal(inits[name], before[name].numpy())
    assert report.state_buffers == []
    assert [b.name for b in report.constant_buffers] == BUFFERS


def test_trainer_buffers_argument_and_its_errors(exported):
    module, graph, _, _ = exported["mlp", "train"]
    start = initial_buffers(graph)
    given = {"1.running_mean": np.full(5, 0.25, np.float32)}
    trainer = Trainer(graph, _params(module), _optimizer("sgd"), progress=False, buffers=given)
    np.testing.assert_array_equal(trainer.buffers()["1.running_mean"], given["1.running_mean"])
    np.testing.assert_array_equal(trainer.buffers()["1.running_var"], start["1.running_var"])
    with pytest.raises(ValueError, match=r"buffers \['1.weight'\] are not buffer state"):
        Trainer(graph, _params(module), _optimizer("sgd"), buffers={"1.weight": np.zeros(5, np.float32)})
    with pytest.raises(ValueError, match=r"buffer '1.running_var': the training graph expects float32\[5\], "
                                         r"the initial value is float64\[5\]"):
        Trainer(graph, _params(module), _optimizer("sgd"), buffers={"1.running_var": np.ones(5)})
    bare = onnx.ModelProto()
    bare.CopyFrom(graph)
    keep = [t for t in bare.graph.initializer if t.name != "1.running_var"]
    del bare.graph.initializer[:]
    bare.graph.initializer.extend(keep)
    with pytest.raises(ValueError, match=r"buffer '1.running_var' of the training graph has no initial value"):
        Trainer(bare, _params(module), _optimizer("sgd"))


# -- checkpoints ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def halfway(exported, tmp_path_factory):
    """A trainer 10 steps into the conv/train/Adam run, its checkpoint, and the uninterrupted run."""
    module, graph, _, _ = exported["conv", "train"]
    data = batches("conv")
    full = Trainer(graph, _params(module), _optimizer("adam"), progress=False)
    full_losses = full.fit(data)
    first = Trainer(graph, _params(module), _optimizer("adam"), progress=False)
    first.fit(data[:10])
    path = tmp_path_factory.mktemp("ckpt") / "half.npz"
    first.save_checkpoint(path)
    return module, graph, data, path, full, full_losses


def _fresh(module, graph):
    return Trainer(graph, _params(module), _optimizer("adam"), progress=False)


def test_checkpoint_resume_equals_uninterrupted_run(halfway):
    module, graph, data, path, full, full_losses = halfway
    ckpt = read_checkpoint(path)
    assert ckpt.meta["format"] == 2 and ckpt.meta["buffers"] == BUFFERS
    assert ckpt.buffers["1.num_batches_tracked"] == 3 + 10
    resumed = _fresh(module, graph)
    resumed.load_checkpoint(path)
    assert resumed.buffers()["1.num_batches_tracked"] == 13
    losses = resumed.fit(data[10:])
    assert losses == full_losses[10:]
    for name, value in full.state_dict().items():
        np.testing.assert_array_equal(resumed.state_dict()[name], value, err_msg=name)


def _rewrite(path, out, *, drop=(), change=None, meta=None):
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files if k not in drop}
    if change:
        arrays.update(change)
    m = json.loads(str(arrays["meta"]))
    if meta:
        m.update(meta)
    arrays["meta"] = np.array(json.dumps(m))
    np.savez(out, **arrays)
    return out


def test_bad_buffer_checkpoints_are_refused_naming_the_buffer(halfway, tmp_path):
    module, graph, _, path, _, _ = halfway
    trainer = _fresh(module, graph)
    before = trainer.state_dict()
    m = json.loads(str(np.load(path)["meta"]))
    others = [b for b in BUFFERS if b != "1.running_var"]
    cases = {
        "missing": (dict(drop=["buffer/1.running_var"], meta={"buffers": others}),
                    r"buffers \['1.num_batches_tracked', '1.running_mean'\] differ from the trainer's"),
        "listed, not stored": (dict(drop=["buffer/1.running_var"]),
                               r"the buffers listed in 'meta' .* are not the ones stored"),
        "shape": (dict(change={"buffer/1.running_var": np.ones(5, np.float32)}),
                  r"buffer '1.running_var' is float32\[5\], expected float32\[4\]"),
        "dtype": (dict(change={"buffer/1.num_batches_tracked": np.array(13, np.int32)}),
                  r"buffer '1.num_batches_tracked' is int32\[\], expected int64\[\]"),
        "non-finite": (dict(change={"buffer/1.running_mean": np.array([0, np.nan, 0, 0], np.float32)}),
                       r"buffer '1.running_mean' holds 1 non-finite value"),
        "format 1 with buffers": (dict(meta={"format": 1}), r"unexpected entries \['buffer/"),
        "old checkpoint without buffers": (
            dict(drop=[f"buffer/{b}" for b in BUFFERS], meta={"format": 1, "buffers": None}),
            r"it has no buffer state \(format 1\), the trainer's graph carries buffers"),
        "buffers not names": (dict(meta={"buffers": [1]}), r"the 'buffers' in 'meta' are not a list of names"),
    }
    assert m["buffers"] == BUFFERS
    for label, (edit, message) in cases.items():
        bad = _rewrite(path, tmp_path / f"{label}.npz", **edit)
        if edit.get("meta", {}).get("buffers", 0) is None:  # a format-1 file has no 'buffers' entry at all
            _strip_meta_key(bad, "buffers")
        with pytest.raises(CheckpointError, match=message) as info:
            trainer.load_checkpoint(bad)
        assert str(bad) in str(info.value), label
        after = trainer.state_dict()
        assert all(np.array_equal(after[k], v) for k, v in before.items()), f"{label}: the trainer changed"


def _strip_meta_key(path, key):
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    m = json.loads(str(arrays["meta"]))
    m.pop(key)
    arrays["meta"] = np.array(json.dumps(m))
    np.savez(path, **arrays)


def test_format_1_checkpoint_still_loads_without_buffers(exported, tmp_path):
    module, graph, _, _ = exported["mlp", "eval"]  # frozen statistics: no buffer state
    data = batches("mlp", 2)
    trainer = Trainer(graph, _params(module), SGD(lr=0.1), progress=False)
    trainer.fit(data)
    path = tmp_path / "new.npz"
    trainer.save_checkpoint(path)
    old = _rewrite(path, tmp_path / "old.npz", meta={"format": 1})
    _strip_meta_key(old, "buffers")
    other = Trainer(graph, _params(module), SGD(lr=0.1), progress=False)
    other.load_checkpoint(old)
    assert other.step_count == 2
    for name, value in trainer.parameters().items():
        np.testing.assert_array_equal(other.parameters()[name], value)


# -- the deployed model ---------------------------------------------------------------------------

def test_deployed_model_has_the_trained_statistics(exported):
    import onnxruntime as ort

    module, graph, _, before = exported["conv", "train"]
    data = batches("conv")
    trainer = Trainer(graph, _params(module), _optimizer("sgd"), progress=False)
    trainer.fit(data)
    eager = train_eager(module, "conv", "sgd", data, LR["sgd"])
    x = torch.from_numpy(data[0][0])
    plain = export_inference_graph(module, (x,), state=trainer.state_dict(), optimize=False)
    inits = {t.name: numpy_helper.to_array(t) for t in plain.graph.initializer}
    for name in ("1.running_mean", "1.running_var"):
        assert normwise(inits[name], eager.state[name]) <= TOL, name
        assert not np.allclose(inits[name], before[name].numpy()), f"{name} is the untrained one"
    eager.module.eval()
    want = eager.module(x).detach().numpy()
    sess = ort.InferenceSession(plain.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(None, {"input": x.numpy()})[0]
    assert normwise(got, want) <= TOL
    assert module.training and torch.equal(module[1].running_mean, before["1.running_mean"])  # untouched
    with pytest.raises(ValueError, match=r"state entry '1.running_var' is torch.float32\[3\], the module's is "
                                         r"torch.float32\[4\]"):
        export_inference_graph(module, (x,), state={"1.running_var": np.ones(3, np.float32)})
    with pytest.raises(ValueError, match=r"state entry 'nope' is not a parameter or buffer"):
        export_inference_graph(module, (x,), state={"nope": np.ones(3, np.float32)})


# -- the export report ----------------------------------------------------------------------------

def test_export_report_lists_translations_and_buffers(exported):
    _, _, report, _ = exported["conv", "train"]
    ours = {o.aten_op for o in report.toolkit_ops}
    assert ours == {"aten.convolution_backward.default", "aten._native_batch_norm_legit_functional.default"}
    table = {str(k) for k in CUSTOM_TRANSLATION_TABLE}
    assert ours <= table and not {o.aten_op for o in report.exporter_ops} & table
    assert all(o.translated_by == TOOLKIT for o in report.toolkit_ops)
    assert all(o.translated_by == EXPORTER for o in report.exporter_ops)
    assert {"aten.convolution.default", "aten.addmm.default"} <= {o.aten_op for o in report.exporter_ops}
    assert [(b.name, b.shape, b.dtype) for b in report.state_buffers] == [
        ("1.running_mean", (4,), "float32"), ("1.running_var", (4,), "float32"), ("1.num_batches_tracked", (), "int64")]
    assert report.constant_buffers == []
    assert report.onnx_ops["Conv"] >= 1 and "BatchNormalization" not in report.onnx_ops  # batch statistics
    text = str(report)
    assert "aten.convolution_backward.default x1" in text and "1.num_batches_tracked: int64[]" in text
    assert json.loads(json.dumps(report.to_dict()))["state_buffers"][0]["name"] == "1.running_mean"


def test_export_report_follows_the_translation_table(monkeypatch):
    """An entry added to the table (as the other translations are) shows up as the toolkit's."""
    from ort_ops.training import translations

    module = MODELS["mlp"]("eval")
    x, y = (torch.from_numpy(a) for a in batches("mlp", 1)[0])
    from onnxscript.function_libs.torch_lib.ops.core import aten_addmm

    monkeypatch.setitem(translations.CUSTOM_TRANSLATION_TABLE, torch.ops.aten.addmm.default, aten_addmm)
    _, report = export_training_graph(module, (x,), LOSSES["mlp"], targets=(y,), params_as_inputs=True,
                                      report=True, verify=False)
    assert "aten.addmm.default" in {o.aten_op for o in report.toolkit_ops}
    assert "aten.addmm.default" not in {o.aten_op for o in report.exporter_ops}


def test_new_outputs_follow_the_interface(exported):
    _, graph, _, _ = exported["mlp", "train"]
    outputs = [o.name for o in graph.graph.output]
    assert outputs[-3:] == [new_name(b) for b in BUFFERS]
    inputs = [i.name for i in graph.graph.input]
    assert inputs[-3:] == BUFFERS


def test_cann_fixture_is_the_conv_bn_model():
    """tests/fixtures/buffer_state/conv_bn_fp32.onnx (the CANN suite's) starts from conv_bn's statistics
    (regenerate it with ``.venv/bin/python tests/training/buffer_models.py``)."""
    from buffer_models import FIXTURE, conv_bn

    graph = onnx.load(str(FIXTURE))
    start = initial_buffers(graph)
    assert list(start) == BUFFERS
    for name, value in conv_bn("train").named_buffers():
        np.testing.assert_array_equal(start[name], value.numpy(), err_msg=name)


def test_cumulative_batch_norm_is_refused_naming_the_module():
    module = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.BatchNorm1d(5, momentum=None))
    x, y = torch.randn(8, 6), torch.randn(8, 5)
    with pytest.raises(ValueError, match=r"module '1' \(BatchNorm1d\) has momentum=None .* set a float momentum"):
        export_training_graph(module, (x,), torch.nn.functional.mse_loss, targets=(y,), params_as_inputs=True)
