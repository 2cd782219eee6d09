"""CLI (exit codes, atomic writes, external data) and the PyTorch-exported fixtures."""

import glob
import json
import os
import subprocess
import sys

import onnx
import pytest

from checks import fuse_and_check
from graphs import mlp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the training graphs (the *_infer fixtures have no backward to fuse)
FIXTURES = sorted(p for p in glob.glob(os.path.join(ROOT, "tests", "fixtures", "*.onnx"))
                  if not p.endswith("_infer.onnx"))


def cli(*args):
    return subprocess.run([sys.executable, "-m", "ort_ops.rewrite", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_fuse_report_validate_and_lower(tmp_path):
    src, out, rep, low = (str(tmp_path / n) for n in ("in.onnx", "out.onnx", "r.json", "low.onnx"))
    onnx.save(mlp(alpha=0.5), src)
    r = cli("fuse", src, out, "--report", rep, "--validate")
    assert r.returncode == 0, r.stderr
    with open(rep) as f:
        assert json.load(f)["sites"][0]["rule"] == "where_input_exp"
    assert "max_abs" in r.stdout
    assert cli("lower", out, low).returncode == 0
    assert "would fuse" in cli("inspect", src).stdout


def test_invalid_input_one_line_error_and_no_output(tmp_path):
    bad, out = str(tmp_path / "bad.onnx"), str(tmp_path / "out.onnx")
    with open(bad, "wb") as f:
        f.write(b"not a model")
    r = cli("fuse", bad, out)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert not os.path.exists(out) and os.listdir(tmp_path) == ["bad.onnx"]
    assert cli("fuse", str(tmp_path / "missing.onnx"), out).returncode == 2


def test_external_data_model_to_other_directory(tmp_path):
    src = str(tmp_path / "in.onnx")
    onnx.save(mlp(), src, save_as_external_data=True, location="in.data", size_threshold=0)
    os.makedirs(tmp_path / "o")
    out = str(tmp_path / "o" / "out.onnx")
    r = cli("fuse", src, out, "--validate")
    assert r.returncode == 0, r.stderr
    (data,) = glob.glob(str(tmp_path / "o" / "out.onnx.*.data"))  # streamed into one new file
    assert sorted(os.listdir(tmp_path / "o")) == ["out.onnx", os.path.basename(data)]
    onnx.checker.check_model(out, full_check=True)


@pytest.mark.skipif(not FIXTURES, reason="no PyTorch fixtures exported yet")
@pytest.mark.parametrize("path", FIXTURES, ids=[os.path.basename(p) for p in FIXTURES])
def test_pytorch_fixture(path):
    model = onnx.load(path)
    n_elu = [n.op_type for n in model.graph.node].count("Elu")
    # the loss backward keeps its own Where/Exp; the ELU backward's LessOrEqual must be gone
    # (onnx's ReferenceEvaluator fails on the CNN's MaxPool/ScatterElements backward itself)
    fused, report = fuse_and_check(model, n_sites=n_elu, remnants={"LessOrEqual"},
                                   reference="cnn" not in path)
    n_exp = lambda m: [n.op_type for n in m.graph.node].count("Exp")
    assert n_exp(model) - n_exp(fused) == (n_elu if "inplace" not in path else 0)
    assert all(s.status == "fused" for s in report.sites), report.summary()
