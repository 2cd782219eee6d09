"""Trainer and checkpoints under careless and hostile use: all-or-nothing checkpoint loading, one
error type for corrupt files, non-finite losses caught at the step, class labels checked like
PyTorch checks them, step counts validated, checkpoint files atomic and with the user's modes."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F

from models.zoo import elu_mlp, example_batch
from ort_ops import rewrite, training
from ort_ops.ops.adam_update import compensations
from ort_ops.training.trainer import SGD, Adam, CheckpointError, NonFiniteLossError, Trainer, load_checkpoint_arrays
from ort_ops.training.verify import to_numpy

BATCH = 8


def _mlp():
    return elu_mlp(alpha=1.0, seed=5)


@pytest.fixture(scope="module")
def graph() -> onnx.ModelProto:
    x, y = example_batch("mlp", BATCH)
    g = training.export_training_graph(_mlp(), (x,), F.cross_entropy, targets=(y,), params_as_inputs=True,
                                     verify=False)
    return rewrite.fuse_elu_grad(g)


def _init():
    return {n: to_numpy(p) for n, p in _mlp().named_parameters()}


def _batch(seed):
    return tuple(t.numpy() for t in example_batch("mlp", BATCH, seed=seed))


def _snapshot(t: Trainer):
    return t.step_count, t.parameters(), t.optimizer_state()


def _assert_same(a, b):
    assert a[0] == b[0]
    for x, y in ((a[1], b[1]), (a[2], b[2])):
        assert sorted(x) == sorted(y)
        for k in x:
            np.testing.assert_array_equal(x[k], y[k])


@pytest.fixture()
def trained(graph, tmp_path):
    """A trainer after 3 Adam steps, and a good checkpoint of it."""
    t = Trainer(graph, _init(), Adam(lr=1e-2), progress=False)
    t.fit([_batch(i) for i in range(3)])
    path = tmp_path / "good.npz"
    t.save_checkpoint(path)
    return t, path


def _rewrite_checkpoint(src, dst, change):
    """Copy checkpoint src to dst with `change(arrays, meta)` applied."""
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays.pop("meta")))
    change(arrays, meta)
    np.savez(dst, meta=np.array(json.dumps(meta)), **arrays)


class _TooSlow(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds):
    """Raise _TooSlow in the block after ``seconds`` (a load that loops per step would run for days)."""
    def expire(signum, frame):
        raise _TooSlow(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _first_state_key(arrays):
    return next(k for k in sorted(arrays) if k.startswith("state/"))


BAD_CONTENTS = {
    "scalar state": (lambda a, m: a.__setitem__(_first_state_key(a), np.float32(0.5)), "is float32[]"),
    "int8 state": (lambda a, m: a.__setitem__(_first_state_key(a), a[_first_state_key(a)].astype(np.int8)),
                   "is int8"),
    "NaN state": (lambda a, m: a[_first_state_key(a)].reshape(-1).__setitem__(0, np.nan), "non-finite"),
    "inf parameter": (lambda a, m: a["param/net.0.weight"].reshape(-1).__setitem__(3, np.inf), "non-finite"),
    "wrong shape": (lambda a, m: a.__setitem__("param/net.0.bias", np.zeros(3, np.float32)), "expected float32"),
    "missing state": (lambda a, m: a.pop(_first_state_key(a)), "optimizer state"),
    "negative step": (lambda a, m: m.__setitem__("step", -2), "step -2"),
    "step as text": (lambda a, m: m.__setitem__("step", "3"), "step '3'"),
    "unlisted parameter": (lambda a, m: m.__setitem__("params", m["params"][:-1]), "listed in 'meta'"),
    # the fused update's scalar states (meta "scalars", checked against the step count in O(1))
    "step beyond 2**53": (lambda a, m: m.__setitem__("step", 2**53 + 1), "is not an int in [0, 2**53]"),
    "step changed, scalars kept": (lambda a, m: m.__setitem__("step", 50),
                                   "scalar state 'adam.scalars'[1] = 0.7290000000000001 does not fit 50 steps"),
    "lr of the scalars differs": (lambda a, m: m["scalars"]["adam.scalars"].__setitem__(0, 0.5),
                                  "scalar state 'adam.scalars'[0] = 0.5 does not fit 3 steps"),
    "bias state's zero": (lambda a, m: m["scalars"]["adam.bias"].__setitem__(1, 1e-3),
                          "scalar state 'adam.bias'[1] = 0.001 does not fit 3 steps"),
    "NaN scalar state": (lambda a, m: m["scalars"]["adam.bias"].__setitem__(0, float("nan")), "is not finite"),
    "short scalar state": (lambda a, m: m["scalars"]["adam.bias"].pop(), "'adam.bias' is float64[2]"),
    "scalar state missing": (lambda a, m: m["scalars"].pop("adam.bias"), "scalar states ['adam.scalars']"),
    "scalars not lists": (lambda a, m: m.__setitem__("scalars", {"adam.bias": 3}), "not lists of numbers"),
    "object entry": (lambda a, m: a.__setitem__("state/extra", np.array(["x"])), "dtype <U1"),
}


@pytest.mark.parametrize("case", sorted(BAD_CONTENTS))
def test_bad_checkpoint_contents_leave_the_trainer_unchanged(trained, tmp_path, case):
    trainer, good = trained
    change, message = BAD_CONTENTS[case]
    bad = tmp_path / "bad.npz"
    _rewrite_checkpoint(good, bad, change)
    before = _snapshot(trainer)
    with _deadline(30), pytest.raises(CheckpointError, match=re.escape(message)) as err:
        trainer.load_checkpoint(bad)
    assert str(bad) in str(err.value)
    _assert_same(_snapshot(trainer), before)
    # and it still trains exactly like a trainer resumed from the good checkpoint
    twin = Trainer(trainer.training_graph, _init(), Adam(lr=1e-2), progress=False)
    twin.load_checkpoint(good)
    assert trainer.step(_batch(9)) == twin.step(_batch(9))
    _assert_same(_snapshot(trainer), _snapshot(twin))


def _corruptions(data: bytes) -> dict[str, bytes]:
    middle = len(data) // 2
    flipped = bytearray(data)
    for i in range(middle, middle + 64):
        flipped[i] ^= 0xFF
    return {
        "empty": b"",
        "random bytes": np.random.default_rng(0).bytes(4096),
        "truncated to 100 bytes": data[:100],
        "truncated in the middle": data[:middle],
        "truncated by 10 bytes": data[:-10],
        "bytes flipped in an entry": bytes(flipped),
    }


def test_bad_checkpoint_contents_are_found_in_constant_time(trained, tmp_path):
    trainer, good = trained
    for case in ("step beyond 2**53", "step changed, scalars kept"):
        bad = tmp_path / "bad.npz"
        _rewrite_checkpoint(good, bad, BAD_CONTENTS[case][0])
        with _deadline(5), pytest.raises(CheckpointError):
            trainer.load_checkpoint(bad)


def _fixed_point(start: float, beta: float) -> float:
    """Where repeated float64 multiplication by beta (< 1) stops moving: a subnormal x with
    round(x * beta) == x (in the normal range every product is smaller)."""
    x, steps = start, 0
    while x * beta != x:
        x, steps = x * beta, steps + 1
    assert steps < 10**6
    return x


def test_checkpoint_at_step_10_to_the_12_loads_in_constant_time(trained, tmp_path):
    """The fused graph's scalar states come from the checkpoint, checked against the step count in
    O(1) (was: one Python iteration per step, 3.5 s at step 2*10^6, days at 10^12). After 10^12
    steps of Adam(0.9, 0.999) the graph's powers sit at their fixed points."""
    trainer, good = trained
    opt = trainer.optimizer
    b1, b2 = 0.9, 0.999
    start = opt.scalar_states(0)[opt.bias_name].tolist()
    far = {opt.scalars_name: [opt.lr, _fixed_point(1.0, b1), _fixed_point(1.0, b2)],
           opt.bias_name: [_fixed_point(start[0], b2), 0.0, _fixed_point(start[2], b2)]}
    assert 0 < far[opt.scalars_name][1] < 1e-320 and 0 < far[opt.scalars_name][2] < 1e-320
    huge = tmp_path / "huge.npz"
    _rewrite_checkpoint(good, huge, lambda a, m: m.update(step=10**12, scalars=far))
    resumed = Trainer(trainer.training_graph, _init(), Adam(lr=1e-2), progress=False)
    with _deadline(5):
        resumed.load_checkpoint(huge)
    assert resumed.step_count == 10**12
    for name, want in far.items():
        np.testing.assert_array_equal(resumed._current()[name].numpy(), want, err_msg=name)
    resumed.step(_batch(5))  # the graph keeps them there
    for name, want in far.items():
        np.testing.assert_array_equal(resumed._current()[name].numpy(), want, err_msg=name)
    # and a state that is not a fixed point is not one of 10^12 steps
    _rewrite_checkpoint(good, huge, lambda a, m: m.update(step=10**12))
    message = r"'adam.scalars'\[1\] = 0.7290000000000001 does not fit 1000000000000 steps"
    with _deadline(5), pytest.raises(CheckpointError, match=message):
        resumed.load_checkpoint(huge)


@pytest.mark.parametrize("steps", [3, 10**12])
def test_checkpoint_without_scalar_states_resumes_from_pytorchs_powers(trained, tmp_path, steps):
    """A checkpoint without meta "scalars" (of the unfused update, or of an earlier version): the
    fused graph's scalar states in closed form, the powers as PyTorch forms them (beta ** step)."""
    trainer, good = trained
    old = tmp_path / "old.npz"
    _rewrite_checkpoint(good, old, lambda a, m: (m.pop("scalars"), m.update(step=steps)))
    resumed = Trainer(trainer.training_graph, _init(), Adam(lr=1e-2), progress=False)
    with _deadline(5):
        resumed.load_checkpoint(old)
    k1, k2 = compensations(0.9, 0.999)
    eps2 = float(np.float32(1e-8)) ** 2
    want = {"adam.scalars": [1e-2, 0.9**steps, 0.999**steps],
            "adam.bias": [k1 * k1 * k2 * 0.999**steps, 0.0, eps2 * k2 * 0.999**steps]}
    for name, value in want.items():
        np.testing.assert_array_equal(resumed._current()[name].numpy(), value, err_msg=name)
    if steps == 3:  # a few ulps from the graph's own powers: the same float32 update
        resumed.step(_batch(9))
        twin = Trainer(trainer.training_graph, _init(), Adam(lr=1e-2), progress=False)
        twin.load_checkpoint(good)
        twin.step(_batch(9))
        _assert_same(_snapshot(resumed), _snapshot(twin))


def test_checkpoint_holds_the_graphs_scalar_states(trained):
    trainer, good = trained
    meta, _, _ = load_checkpoint_arrays(good)
    cur = trainer._current()
    assert sorted(meta["scalars"]) == ["adam.bias", "adam.scalars"]
    for name, value in meta["scalars"].items():
        assert np.array(value, np.float64).tobytes() == cur[name].numpy().tobytes(), name


def test_corrupt_checkpoint_files_raise_checkpoint_error_naming_the_file(trained, tmp_path):
    trainer, good = trained
    data = good.read_bytes()
    before = _snapshot(trainer)
    cases = _corruptions(data)
    npy = tmp_path / "array.npz"
    with open(npy, "wb") as f:
        np.save(f, np.zeros(3))
    cases["a .npy array"] = npy.read_bytes()
    not_json = tmp_path / "nj.npz"
    np.savez(not_json, meta=np.array("{not json"))
    cases["meta not JSON"] = not_json.read_bytes()
    as_list = tmp_path / "list.npz"
    np.savez(as_list, meta=np.array("[1, 2]"))
    cases["meta a JSON list"] = as_list.read_bytes()
    no_meta = tmp_path / "nometa.npz"
    np.savez(no_meta, x=np.zeros(2))
    cases["no meta"] = no_meta.read_bytes()
    for name, content in cases.items():
        path = tmp_path / f"corrupt-{name.replace(' ', '_')}.npz"
        path.write_bytes(content)
        with pytest.raises(CheckpointError) as err:
            trainer.load_checkpoint(path)
        assert str(path) in str(err.value), name
        assert "not a training checkpoint" in str(err.value), name
        _assert_same(_snapshot(trainer), before)
    with pytest.raises(FileNotFoundError):
        load_checkpoint_arrays(tmp_path / "missing.npz")


def test_nan_in_a_batch_raises_at_that_step_and_keeps_the_good_state(graph, tmp_path):
    t = Trainer(graph, _init(), SGD(lr=0.05, momentum=0.9), progress=False)
    t.fit([_batch(0), _batch(1)])
    x, y = _batch(2)
    x = x.copy()
    x[3, 5] = np.nan
    with pytest.raises(NonFiniteLossError, match="at training step 4") as err:
        t.fit([_batch(3), (x, y), _batch(4)])
    assert err.value.step == 4 and np.isnan(err.value.loss)
    # step 3 was taken, the NaN step 4 discarded: the state after 3 steps, finite
    reference = Trainer(graph, _init(), SGD(lr=0.05, momentum=0.9), progress=False)
    reference.fit([_batch(0), _batch(1), _batch(3)])
    _assert_same(_snapshot(t), _snapshot(reference))
    assert all(np.isfinite(a).all() for a in t.parameters().values())
    # a later save does not see NaN: the checkpoint stays good
    t.save_checkpoint(tmp_path / "ckpt.npz")
    _, params, _ = load_checkpoint_arrays(tmp_path / "ckpt.npz")
    assert all(np.isfinite(a).all() for a in params.values())


def test_nan_steps_can_be_skipped(graph):
    x, y = _batch(2)
    x = x.copy()
    x[0, 0] = np.inf
    skipping = Trainer(graph, _init(), Adam(lr=1e-2), progress=False, on_nonfinite="skip")
    losses = skipping.fit([_batch(0), (x, y), _batch(1)])
    assert np.isnan(losses[1]) or np.isinf(losses[1])
    assert skipping.skipped_steps == 1 and skipping.step_count == 2
    clean = Trainer(graph, _init(), Adam(lr=1e-2), progress=False)
    clean.fit([_batch(0), _batch(1)])
    _assert_same(_snapshot(skipping), _snapshot(clean))
    with pytest.raises(ValueError, match="on_nonfinite"):
        Trainer(graph, _init(), Adam(), on_nonfinite="ignore")


def test_checkpoint_with_nonfinite_parameters_is_not_written(graph, tmp_path):
    path = tmp_path / "ckpt.npz"
    Trainer(graph, _init(), SGD(lr=0.1), progress=False).save_checkpoint(path)
    good = path.read_bytes()
    params = _init()
    params["net.2.bias"] = params["net.2.bias"].copy()
    params["net.2.bias"][1] = np.nan
    t = Trainer(graph, params, SGD(lr=0.1), progress=False)
    with pytest.raises(ValueError, match="param/net.2.bias holds 1 non-finite"):
        t.save_checkpoint(path)
    assert path.read_bytes() == good
    t.save_checkpoint(path, allow_nonfinite=True)
    assert path.read_bytes() != good
    assert sorted(os.listdir(tmp_path)) == ["ckpt.npz"]


def test_class_labels_are_checked_like_pytorch(graph):
    t = Trainer(graph, _init(), SGD(lr=0.1), progress=False)
    x, y = _batch(0)
    for bad in (-1, 10, 1000):
        labels = y.copy()
        labels[2] = bad
        with pytest.raises(ValueError, match=rf"'target' holds {bad} at index \[2\].*0 to 9 or -100"):
            t.step((x, labels))
        with pytest.raises((IndexError, RuntimeError)):  # what PyTorch says of the same labels
            F.cross_entropy(_mlp()(torch.from_numpy(x)), torch.from_numpy(labels))
    assert t.step_count == 0
    labels = y.copy()
    labels[:3] = -100  # PyTorch's ignore_index: ignored, not an error
    loss = t.step((x, labels))
    want = F.cross_entropy(_mlp()(torch.from_numpy(x)), torch.from_numpy(labels)).item()
    assert loss == pytest.approx(want, rel=1e-5)


def test_step_counts_are_validated(graph):
    t = Trainer(graph, _init(), Adam(), progress=False)
    for bad in (-1, 1.5, "3", True):
        with pytest.raises(ValueError, match="max_steps"):
            t.fit([_batch(0)], max_steps=bad)
    assert t.fit([_batch(0)], max_steps=0) == []
    for bad in (0, -3):
        with pytest.raises(ValueError, match="step numbers start at 1"):
            Adam().step_scalars(bad)


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_checkpoint_mode_follows_the_umask_and_an_existing_file_keeps_its_mode(graph, tmp_path, mask):
    t = Trainer(graph, _init(), SGD(lr=0.1), progress=False)
    old = os.umask(mask)
    try:
        t.save_checkpoint(tmp_path / "new.npz")
        kept = tmp_path / "kept.npz"
        kept.write_bytes(b"old")
        os.chmod(kept, 0o640)
        t.save_checkpoint(kept)
    finally:
        os.umask(old)
    assert (tmp_path / "new.npz").stat().st_mode & 0o777 == 0o666 & ~mask
    assert kept.stat().st_mode & 0o777 == 0o640


_KILLED_WRITER = textwrap.dedent("""
    import sys, time
    from ort_ops.files import atomic_write
    def write(f):
        f.write(b"x" * (1 << 20))
        f.flush()
        print("writing", flush=True)
        time.sleep(60)
    atomic_write(sys.argv[1], write)
""")


def test_kill_during_checkpoint_write_keeps_the_old_file_and_the_next_save_cleans_up(graph, tmp_path):
    path = tmp_path / "ckpt.npz"
    t = Trainer(graph, _init(), SGD(lr=0.1), progress=False)
    t.save_checkpoint(path)
    good = path.read_bytes()
    with subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(path)], stdout=subprocess.PIPE,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))) as child:
        assert child.stdout.readline().strip() == b"writing"
        child.send_signal(signal.SIGKILL)
        child.wait()
    leftovers = [n for n in os.listdir(tmp_path) if n != "ckpt.npz"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".ckpt.npz.tmp-")  # kill -9 leaves it
    assert path.read_bytes() == good
    load_checkpoint_arrays(path)
    t.step(_batch(0))
    t.save_checkpoint(path)  # the next write of the same file removes the dead writer's file
    assert os.listdir(tmp_path) == ["ckpt.npz"]
