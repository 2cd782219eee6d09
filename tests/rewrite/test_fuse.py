"""Whole-pass behaviour: no-op graphs, idempotence, what is preserved, the report, inspect."""

import json

import numpy as np
import onnx
from onnx import helper, numpy_helper

from checks import fuse_and_check, ops
from graphs import elu_backward, mlp
from rewrite import RewriteReport, fuse_elu_grad, has_candidates, inspect_elu_grad


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
