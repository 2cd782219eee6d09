"""--validate users can trust: the model's real values (parameters drawn like PyTorch's
initialisation, class indices in range, or the user's), reference-evaluator failures as skipped
checks, random ops seeded alike, shape changes as mismatches, and a function that works twice."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
import torch.nn.functional as F
from torch import nn

from models.zoo import elu_cnn, elu_mlp, example_batch
from ort_ops import rewrite, training
from ort_ops.rewrite.validation import compare, make_inputs, validate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def readme_graph():
    """The README's recommended training graph: parameters as inputs."""
    x, y = example_batch("mlp", 16)
    return training.export_training_graph(elu_mlp(alpha=0.5, seed=0), (x,), F.cross_entropy, targets=(y,),
                                        params_as_inputs=True, verify=False)


@pytest.fixture(scope="module")
def cnn_graph():
    x, y = example_batch("cnn", 4)
    return training.export_training_graph(elu_cnn(seed=0), (x,), F.cross_entropy, targets=(y,),
                                        params_as_inputs=True, verify=False)


def test_readme_training_graph_validates_with_realistic_values(readme_graph):
    fused = rewrite.fuse_elu_grad(readme_graph)
    result = validate(readme_graph, fused, out=None)
    assert result.ok, result.table()
    notes = " ".join(result.notes)
    assert "like PyTorch's default initialisation" in notes and "class indices in [0, 10)" in notes
    assert "net.0.weight" in notes and "target" in notes
    feeds, _ = make_inputs(readme_graph)
    bound = 1 / np.sqrt(feeds["net.0.weight"].shape[1])
    assert np.abs(feeds["net.0.weight"]).max() <= bound
    assert feeds["target"].min() >= 0 and feeds["target"].max() < 10


def test_strict_fuse_of_the_readme_graph_validates(readme_graph):
    strict = rewrite.fuse_elu_grad(readme_graph, strict=True)
    assert validate(readme_graph, strict, out=None).ok


def test_user_given_inputs_are_used_and_named(readme_graph, tmp_path):
    feeds, _ = make_inputs(readme_graph, seed=3)
    path = tmp_path / "in.npz"
    np.savez(path, **{k: v for k, v in feeds.items() if k != "input"})
    result = validate(readme_graph, rewrite.fuse_elu_grad(readme_graph), inputs=str(path), out=None)
    assert result.ok
    assert any(n.startswith("inputs ") and "given" in n and "net.0.weight" in n for n in result.notes)
    with pytest.raises(ValueError, match="not inputs of the model"):
        validate(readme_graph, readme_graph, inputs={"nope": np.zeros(1)}, out=None)


def test_cnn_validation_does_not_crash_and_says_what_it_skipped(cnn_graph, tmp_path):
    fused = rewrite.fuse_elu_grad(cnn_graph)
    result = validate(cnn_graph, fused, out=None)
    assert result.ok, result.table()
    against = {c.against for c in result.checks}
    assert "ort-original" in against
    assert "reference" in against or any(n.startswith("reference check skipped: ") for n in result.notes)
    src, out = tmp_path / "cnn.onnx", tmp_path / "fused.onnx"
    onnx.save(cnn_graph, str(src))
    r = subprocess.run([sys.executable, "-m", "ort_ops.rewrite", "fuse", str(src), str(out), "--validate"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "fuse failed" not in r.stderr


def test_reference_evaluator_failures_are_skipped_checks_not_failures(readme_graph, monkeypatch):
    import onnx.reference

    class Broken:
        def __init__(self, *a, **k):
            raise IndexError("index 21 is out of bounds for axis 1 with size 10")

    monkeypatch.setattr(onnx.reference, "ReferenceEvaluator", Broken)
    result = validate(readme_graph, rewrite.fuse_elu_grad(readme_graph), out=None)
    assert result.ok
    assert any(n.startswith("reference check skipped: IndexError: index 21") for n in result.notes)


def test_random_ops_are_seeded_alike_and_said():
    x, y = example_batch("mlp", 8)

    class Drop(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(64, 32)
            self.d = nn.Dropout(0.3)
            self.b = nn.Linear(32, 10)

        def forward(self, t):
            return self.b(self.d(F.elu(self.a(t))))

    graph = training.export_training_graph(Drop(), (x,), F.cross_entropy, targets=(y,), params_as_inputs=True,
                                         verify=False, dropout_masks=False)  # the random ONNX Dropout
    assert "Dropout" in [n.op_type for n in graph.graph.node]
    result = validate(graph, rewrite.fuse_elu_grad(graph), out=None)
    assert result.ok, result.table()
    assert any("random ops (Dropout): both models seeded alike" in n for n in result.notes)
    assert any("reference check skipped: random ops" in n for n in result.notes)


def test_a_changed_output_shape_is_a_mismatch_with_a_message():
    check = compare("y", "ort-original", np.zeros((2, 3)), np.zeros((3, 2)))
    assert not check.ok and "shape [2, 3] differs from [3, 2]" in check.message


def test_nonfinite_values_in_both_are_reported_not_mismatches():
    a = np.array([1.0, np.nan, np.inf, -np.inf], np.float32)
    check = compare("y", "ort-original", a, a.copy())
    assert check.ok and check.nonfinite == 3
    b = a.copy()
    b[1] = 0.0
    assert not compare("y", "ort-original", a, b).ok


def test_validate_works_more_than_once_per_process(readme_graph):
    fused = rewrite.fuse_elu_grad(readme_graph)
    assert rewrite.validate(readme_graph, fused, out=None).ok
    assert rewrite.validate(readme_graph, fused, out=None).ok
