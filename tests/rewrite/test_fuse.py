"""Whole-pass behaviour: no-op graphs, idempotence, what is preserved, the report, inspect."""

import json

import numpy as np
import onnx
from onnx import helper, numpy_helper

from checks import fuse_and_check, ops
from graphs import elu_backward, mlp
from ort_ops.rewrite import RewriteReport, fuse_elu_grad, has_candidates, inspect_elu_grad


def test_mlp_training_graph():
    fused, report = fuse_and_check(mlp())
    assert ops(fused).count("EluGrad") == 1 and "Exp" not in ops(fused)


def test_no_elu_backward_is_untouched_and_detected_from_protobuf(monkeypatch):
    model = elu_backward("torch")
    fwd_only = onnx.ModelProto()
    fwd_only.CopyFrom(model)
    keep = [n for n in fwd_only.graph.node if n.op_type in ("Elu",) or n.name.startswith("fwd")]
    del fwd_only.graph.node[:]
    fwd_only.graph.node.extend(keep)
    del fwd_only.graph.output[1:]
    assert not has_candidates(fwd_only.graph)
    import onnx_graphsurgeon as gs
    monkeypatch.setattr(gs, "import_onnx", lambda *a: (_ for _ in ()).throw(AssertionError("built")))
    out = fuse_elu_grad(fwd_only)
    assert out.SerializeToString() == fwd_only.SerializeToString()


def test_idempotent():
    once = fuse_elu_grad(mlp(alpha=0.5))
    assert fuse_elu_grad(once).SerializeToString() == once.SerializeToString()


def test_preserves_metadata_opsets_initializers():
    model = mlp()
    model.metadata_props.append(onnx.StringStringEntryProto(key="k", value="v"))
    model.opset_import.append(helper.make_opsetid("com.example", 3))
    model.doc_string = "doc"
    model.graph.initializer.append(numpy_helper.from_array(np.ones(3, np.float32), "unused_init"))
    fused = fuse_elu_grad(model)
    assert fused.metadata_props[0].value == "v" and fused.doc_string == "doc"
    assert {(o.domain, o.version) for o in fused.opset_import} >= {("com.example", 3), ("ai.ortops", 1)}
    names = {t.name for t in fused.graph.initializer}
    assert {"fc1.weight", "fc2.weight", "unused_init"} <= names
    # initializers only the removed backward read are gone; every other one (read by a node now,
    # or unused before) is kept
    read_before = {i for n in model.graph.node for i in n.input}
    read_after = {i for n in fused.graph.node for i in n.input}
    want = {t.name for t in model.graph.initializer if t.name in read_after or t.name not in read_before}
    assert names == want
    assert any(t.name in read_before and t.name not in read_after for t in model.graph.initializer)


def test_external_data_initializers_not_loaded(tmp_path):
    model = mlp()
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path, save_as_external_data=True, location="m.data", size_threshold=0)
    lazy = onnx.load(path, load_external_data=False)
    fused = fuse_elu_grad(lazy)
    ext = [t for t in fused.graph.initializer if t.name == "fc1.weight"][0]
    assert ext.data_location == onnx.TensorProto.EXTERNAL and not ext.raw_data


def test_report_json_and_inspect():
    report = RewriteReport()
    fuse_elu_grad(elu_backward("torch", alpha=0.5), report=report)
    data = json.loads(report.to_json())
    (site,) = data["sites"]
    assert site["rule"] == "where_input_exp" and site["alpha"] == 0.5 and site["dtype"] == "float32"
    assert site["nodes"] and any("boundary" in n for n in site["notes"])
    ins = inspect_elu_grad(elu_backward("torch"), strict=True)
    assert ins.sites[0].status == "rejected" and "strict" in ins.sites[0].reason
    assert inspect_elu_grad(elu_backward("torch")).sites[0].status == "would fuse"


def _head_counts(head: str, what: str) -> dict[str, int]:
    """``{op: count}`` from the summary line's ``N site(s) <what> (n Op, m Op2)``."""
    import re

    found = re.search(rf"(\d+) site\(s\) {what}(?: \(([^)]*)\))?,", head) if what != "rejected" else \
        re.search(r", (\d+) rejected(?: \(([^)]*)\))?", head)
    assert found, head
    counts = {op: int(n) for n, op in (part.split(" ") for part in found.group(2).split(", "))} if found.group(2) \
        else {}
    assert sum(counts.values()) == int(found.group(1)), head
    return counts


def test_summary_counts_each_kind_of_site():
    """fuse_training fuses the loss and the max-pool backward too: the summary line says how many
    sites of each kind (issue 19 item 20), as many as the ops in the fused model."""
    from models.fixture_graphs import training_case
    from ort_ops import rewrite

    graph, _, _ = training_case("cnn_elu_fp32")
    report = RewriteReport()
    fused = rewrite.fuse_training(graph, report=report)
    head = report.summary().splitlines()[0]
    kinds = ("EluGrad", "SoftmaxCrossEntropyLossAndGrad", "MaxPoolGrad")
    want = {op: ops(fused).count(op) for op in kinds}
    assert all(want.values()), want
    assert _head_counts(head, "rewritten") == want
    assert _head_counts(head, "rejected") == {}
    assert head.endswith(", 0 rejected")


def test_summary_counts_rejected_sites_by_kind():
    from ort_ops.rewrite.report import SiteReport

    site = lambda status, op, reason=None: SiteReport(rule="r", status=status, nodes=[], output="y", op=op,
                                                      reason=reason)
    report = RewriteReport(pass_name="fuse", sites=[
        site("fused", "EluGrad"), site("rejected", "SoftmaxCrossEntropyLossAndGrad", "why"),
        site("fused", "EluGrad"), site("rejected", "EluGrad", "why"),
        site("rejected", "SoftmaxCrossEntropyLossAndGrad", "why")])
    head = report.summary().splitlines()[0]
    assert head == "fuse: 2 site(s) rewritten (2 EluGrad), 3 rejected (2 SoftmaxCrossEntropyLossAndGrad, 1 EluGrad)"
    assert RewriteReport(pass_name="fuse").summary() == "fuse: 0 site(s) rewritten, 0 rejected"


def test_lower_summary_names_the_lowered_ops():
    from models.fixture_graphs import training_case
    from ort_ops import rewrite

    graph, _, _ = training_case("mlp_elu_fp32")
    fused = rewrite.fuse_training(graph)
    report = RewriteReport()
    lowered = rewrite.lower(fused, report=report)
    head = report.summary().splitlines()[0]
    want = {op: ops(fused).count(op) for op in ("EluGrad", "SoftmaxCrossEntropyLossAndGrad") if op in ops(fused)}
    assert _head_counts(head, "rewritten") == want and len(want) == 2
    assert not set(want) & set(ops(lowered))
