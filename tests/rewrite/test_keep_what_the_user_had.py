"""Fuse and lower keep every node's doc string and metadata (the EluGrad takes its root's), name
sites by the exporter's layer, print alpha as written, and inspect says it changes nothing."""

from __future__ import annotations

import onnx
import pytest
import torch.nn.functional as F

from models.zoo import elu_mlp, example_batch
from ort_ops import rewrite, training


@pytest.fixture(scope="module")
def exported():
    x, y = example_batch("mlp", 8)
    return training.export_training_graph(elu_mlp(alpha=0.3, seed=1), (x,), F.cross_entropy, targets=(y,),
                                        params_as_inputs=True, verify=False)


def _meta(model):
    return {n.output[0]: ([(p.key, p.value) for p in n.metadata_props], n.doc_string)
            for n in model.graph.node if n.output}


def test_fuse_and_lower_keep_node_metadata_and_doc_strings(exported):
    model = onnx.ModelProto()
    model.CopyFrom(exported)
    for i, n in enumerate(model.graph.node):
        n.doc_string = f"doc of node {i}"
    before = _meta(model)
    assert sum(len(m) for m, _ in before.values()) > 50  # PyTorch writes plenty
    report = rewrite.RewriteReport()
    fused = rewrite.fuse_elu_grad(model, report=report)
    after = _meta(fused)
    for out, (meta, doc) in after.items():
        assert (meta, doc) == before[out], out  # untouched nodes and EluGrad (its root's)
    elu_grads = [n for n in fused.graph.node if n.op_type == "EluGrad"]
    assert len(elu_grads) == 2 and all(n.metadata_props for n in elu_grads)
    lowered = rewrite.lower_elu_grad(fused)
    kept = _meta(lowered)
    assert sum(1 for out, m in kept.items() if out in before and m == before[out]) == len(kept) - sum(
        1 for out in kept if out not in before)


def test_reports_name_the_layer_and_print_alpha_as_written(exported):
    report = rewrite.RewriteReport()
    rewrite.fuse_elu_grad(exported, report=report)
    assert [s.alpha for s in report.fused] == [0.3, 0.3]
    assert all(s.layer for s in report.fused)
    text = report.summary()
    assert "alpha=0.3," in text and "0.30000001" not in text and "(layer " in text


def test_inspect_says_would_be_rewritten_and_changes_nothing(exported):
    before = exported.SerializeToString()
    report = rewrite.inspect_elu_grad(exported)
    assert report.summary().startswith("inspect: 2 site(s) would be rewritten (2 EluGrad), 0 rejected\n")
    assert exported.SerializeToString() == before


def test_paths_are_accepted_everywhere(exported, tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(exported, str(path))
    fused = rewrite.fuse_elu_grad(str(path))
    assert [n.op_type for n in fused.graph.node].count("EluGrad") == 2
    assert rewrite.inspect_elu_grad(path).fused
    fpath = tmp_path / "f.onnx"
    onnx.save(fused, str(fpath))
    assert "EluGrad" not in [n.op_type for n in rewrite.lower_elu_grad(str(fpath)).graph.node]
    assert rewrite.validate(str(path), str(fpath), out=None).ok
    with pytest.raises(TypeError, match="expected an onnx.ModelProto or a file path"):
        rewrite.fuse_elu_grad(42)
