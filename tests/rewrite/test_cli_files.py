"""The CLI never destroys what the user had: refused output paths, non-regular targets, file
modes, validation and output checks before anything is written, no temporary file left on any
error path, and large external-data models streamed instead of loaded."""

from __future__ import annotations

import glob
import os
import resource
import stat
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from graphs import elu_backward, mlp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cli(*args, preexec=None, env=None):
    return subprocess.run([sys.executable, "-m", "ort_ops.rewrite", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, preexec_fn=preexec, env=env)


def _listing(path):
    return sorted(os.listdir(path))


@pytest.fixture()
def ext(tmp_path):
    """A model with its initializers in external data (ext.onnx + ext.data)."""
    path = tmp_path / "ext.onnx"
    onnx.save(mlp(alpha=0.5), str(path), save_as_external_data=True, all_tensors_to_one_file=True,
              location="ext.data", size_threshold=0)
    return path


def _snapshot(folder):
    return {name: (folder / name).read_bytes() for name in os.listdir(folder)}


@pytest.mark.parametrize("target, what", [("ext.onnx", "is the input model"),
                                          ("ext.data", "is external data of")])
def test_output_that_is_the_input_or_its_data_is_refused(ext, target, what):
    before = _snapshot(ext.parent)
    r = cli("fuse", ext, ext.parent / target)
    assert r.returncode == 2 and what in r.stderr and "nothing written" in r.stderr
    assert _snapshot(ext.parent) == before


def test_report_path_that_is_the_input_or_the_output_is_refused(ext, tmp_path):
    before = _snapshot(tmp_path)
    for report in (ext, tmp_path / "out.onnx", tmp_path / "ext.data"):
        r = cli("fuse", ext, tmp_path / "out.onnx", "--report", report)
        assert r.returncode == 2, r.stderr
        assert _snapshot(tmp_path) == before


def test_same_file_through_another_name_is_refused(ext, tmp_path):
    link = tmp_path / "hard.onnx"
    os.link(ext, link)
    before = _snapshot(tmp_path)
    assert cli("fuse", ext, link).returncode == 2
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("kind", ["fifo", "symlink", "directory", "device"])
def test_non_regular_targets_are_refused(tmp_path, kind):
    src = tmp_path / "in.onnx"
    onnx.save(mlp(), str(src))
    target = tmp_path / "out.onnx"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink":
        (tmp_path / "elsewhere.onnx").write_bytes(b"keep me")
        os.symlink(tmp_path / "elsewhere.onnx", target)
    elif kind == "directory":
        os.mkdir(target)
    else:
        target = "/dev/null"
    r = cli("fuse", src, target)
    assert r.returncode == 2 and "refusing to replace" in r.stderr, r.stderr
    if kind == "fifo":
        assert stat.S_ISFIFO(os.lstat(target).st_mode)
    if kind == "symlink":
        assert os.path.islink(target) and (tmp_path / "elsewhere.onnx").read_bytes() == b"keep me"
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".")]


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_outputs_follow_the_umask_and_keep_an_existing_mode(tmp_path, mask):
    src = tmp_path / "in.onnx"
    onnx.save(mlp(), str(src))
    os.chmod(src, 0o644)
    r = cli("fuse", src, tmp_path / "new.onnx", "--report", tmp_path / "r.json",
            preexec=lambda: os.umask(mask))
    assert r.returncode == 0, r.stderr
    for name in ("new.onnx", "r.json"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o666 & ~mask
    kept = tmp_path / "kept.onnx"
    kept.write_bytes(b"old")
    os.chmod(kept, 0o640)
    assert cli("fuse", src, kept, preexec=lambda: os.umask(mask)).returncode == 0
    assert kept.stat().st_mode & 0o777 == 0o640


def test_validation_runs_before_anything_is_written(tmp_path):
    """X == 0 is where ``<=`` with alpha 0.5 and EluGrad differ (alpha*dY against dY): with zero
    inputs the validation fails, and no output file appears (the report does, as asked)."""
    src = tmp_path / "in.onnx"
    onnx.save(elu_backward("inplace", alpha=0.5), str(src))
    inputs = tmp_path / "zeros.npz"
    np.savez(inputs, X0=np.zeros((4, 6), np.float32), dY0=np.ones((4, 6), np.float32))
    before = set(os.listdir(tmp_path))
    r = cli("fuse", src, tmp_path / "out.onnx", "--validate", "--inputs", inputs, "--report", tmp_path / "r.json")
    assert r.returncode == 1 and "validation failed" in r.stderr and "nothing written" in r.stderr
    assert set(os.listdir(tmp_path)) == before | {"r.json"}
    assert "inputs X0, dY0: given" in r.stdout
    r = cli("fuse", src, tmp_path / "out.onnx", "--validate")  # drawn inputs: X == 0 does not occur
    assert r.returncode == 0, r.stderr
    assert "N(0, 1)" in r.stdout


def test_an_output_ort_cannot_load_is_not_written(tmp_path):
    """A graph with an op ORT does not have: the fused model passes the checker but no session
    can be made, so the CLI exits 2 and writes nothing."""
    model = elu_backward("torch")
    model.graph.node.append(helper.make_node("Mystery", ["Y0"], ["extra"], domain="example.mystery"))
    model.graph.output.append(helper.make_tensor_value_info("extra", TP.FLOAT, [4, 6]))
    model.opset_import.append(helper.make_opsetid("example.mystery", 1))
    src = tmp_path / "in.onnx"
    onnx.save(model, str(src))
    r = cli("fuse", src, tmp_path / "out.onnx")
    assert r.returncode == 2 and "ONNX Runtime cannot load the fused model" in r.stderr, r.stderr
    assert _listing(tmp_path) == ["in.onnx"]


def _big_model(folder, megabytes):
    """An ELU backward next to a large initializer, all in external data."""
    model = elu_backward("torch", alpha=0.5)
    n = megabytes * (1 << 20) // 4
    big = numpy_helper.from_array(np.arange(n, dtype=np.float32) % 7, "big")
    model.graph.initializer.append(big)
    model.graph.node.append(helper.make_node("ReduceSum", ["big"], ["big_sum"], keepdims=0))
    model.graph.output.append(helper.make_tensor_value_info("big_sum", TP.FLOAT, []))
    path = folder / "big.onnx"
    onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="big.data",
              size_threshold=0)
    return path


def test_a_write_that_fails_leaves_no_temporary_file(tmp_path):
    """The data file cannot be written past 1 MiB (RLIMIT_FSIZE, like a full disk): exit 2, and
    neither the output nor any temporary file is left."""
    src = _big_model(tmp_path, 4)
    os.makedirs(tmp_path / "o")

    def limit():
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    r = cli("fuse", src, tmp_path / "o" / "out.onnx", preexec=limit)
    assert r.returncode == 2, r.stderr
    assert _listing(tmp_path / "o") == []


def test_large_external_data_is_streamed_not_loaded(tmp_path):
    """200 MB of weights fused into another folder: the data is copied in chunks; the peak memory
    of the whole run (ORT's check loads the model once) stays under twice the data's size."""
    src = _big_model(tmp_path, 200)
    os.makedirs(tmp_path / "o")
    # VmHWM: the peak resident size of this process's memory (ru_maxrss would include the
    # parent's peak from before exec)
    code = ("import sys; from ort_ops.rewrite.cli import main; rc = main(sys.argv[1:]); "
            "print('MAXRSS', next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM'))); "
            "sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", code, "fuse", str(src), str(tmp_path / "o" / "out.onnx")], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    peak_mb = int(r.stdout.split("MAXRSS")[1].split()[0]) / 1024
    assert peak_mb < 2 * 200, f"peak RSS {peak_mb:.0f} MB for 200 MB of external data"
    (data,) = glob.glob(str(tmp_path / "o" / "out.onnx.*.data"))
    assert os.path.getsize(data) >= 200 * (1 << 20)
    import onnxruntime as ort

    import ort_ops

    feeds = {"X0": np.ones((4, 6), np.float32), "dY0": np.ones((4, 6), np.float32)}
    sums = [ort.InferenceSession(str(p), ort_ops.register(ort.SessionOptions()),
                                 providers=["CPUExecutionProvider"]).run(["big_sum"], feeds)[0]
            for p in (src, tmp_path / "o" / "out.onnx")]
    assert sums[0] == sums[1] and sums[0] > 1e8  # the copied weights are the weights


def test_fusing_again_replaces_the_previous_data_file(tmp_path):
    src = _big_model(tmp_path, 1)
    os.makedirs(tmp_path / "o")
    out = tmp_path / "o" / "out.onnx"
    for _ in range(2):
        assert cli("fuse", src, out).returncode == 0
        assert len(glob.glob(str(tmp_path / "o" / "out.onnx.*.data"))) == 1
    onnx.checker.check_model(str(out), full_check=True)


def test_in_place_output_next_to_the_input_keeps_sharing_its_data(ext, tmp_path):
    out = tmp_path / "fused.onnx"
    assert cli("fuse", ext, out).returncode == 0
    assert _listing(tmp_path) == ["ext.data", "ext.onnx", "fused.onnx"]
    onnx.checker.check_model(str(out), full_check=True)


def test_cli_inspect_and_lower_of_a_model_with_unnamed_nodes(tmp_path):
    model = elu_backward("torch", layers=2)
    for n in model.graph.node:
        n.name = ""
    src = tmp_path / "in.onnx"
    onnx.save(model, str(src))
    r = cli("inspect", src)
    assert r.returncode == 0 and "2 site(s) would be rewritten" in r.stdout
    assert cli("fuse", src, tmp_path / "f.onnx").returncode == 0
    assert cli("lower", tmp_path / "f.onnx", tmp_path / "l.onnx").returncode == 0
    onnx.checker.check_model(str(tmp_path / "l.onnx"), full_check=True)

