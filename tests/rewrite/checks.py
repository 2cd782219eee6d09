"""Assertions the rewrite tests share: op list, checker, ORT before/after, reference evaluator."""

from __future__ import annotations

import onnx

from ort_ops import ort_io
from ort_ops.reference import OPS
from ort_ops.rewrite import RewriteReport, fuse_elu_grad
from ort_ops.rewrite.validation import compare, random_inputs, session

BACKWARD_OPS = {"Where", "LessOrEqual", "Less", "Exp", "Min", "Add"}


def ops(model):
    return [n.op_type for n in model.graph.node]


def fuse_and_check(model, expected_ops=None, *, strict=False, n_sites=1, ort=True, reference=True,
                   remnants=BACKWARD_OPS):
    """Fuse, then assert: op list, one EluGrad per site, checker, ORT and reference agreement."""
    before = model.SerializeToString()
    report = RewriteReport()
    fused = fuse_elu_grad(model, strict=strict, report=report)
    assert model.SerializeToString() == before, "input model was mutated"
    if expected_ops is not None:
        assert sorted(ops(fused)) == sorted(expected_ops), ops(fused)
    assert ops(fused).count("EluGrad") == n_sites == len(report.fused), report.summary()
    assert not set(remnants) & set(ops(fused)), ops(fused)
    onnx.checker.check_model(fused, full_check=True)
    assert [o.name for o in fused.graph.output] == [o.name for o in model.graph.output]
    assert [i.name for i in fused.graph.input] == [i.name for i in model.graph.input]
    feeds = random_inputs(model, seed=1)
    names = [o.name for o in model.graph.output]
    if ort:
        want = ort_io.run(session(model), feeds, names)
        got = ort_io.run(session(fused), feeds, names)
        for name, g, w in zip(names, got, want):
            check = compare(name, "ort", g, w)
            assert check.ok, check
    if reference:
        ref = onnx.reference.ReferenceEvaluator(fused, new_ops=list(OPS)).run(None, feeds)
        if ort:
            for name, r, g in zip(names, ref, got):
                check = compare(name, "reference", r, g)
                assert check.ok, check
    return fused, report


def graphsurgeon_exported(fuse, model, **kwargs):
    """``fuse(model)`` with every graph imported into graphsurgeon and written by its export (the
    path the single-graph one replaces), for comparing the two."""
    import ort_ops.rewrite.fuse as fuse_module

    class Unusable(fuse_module.ProtoIndex):
        def __init__(self, graph, proto):
            super().__init__(graph, proto)
            self.usable = self.single = False

    saved = fuse_module.ProtoIndex, fuse_module.PROTO_PATH
    fuse_module.ProtoIndex, fuse_module.PROTO_PATH = Unusable, False
    try:
        return fuse(model, **kwargs)
    finally:
        fuse_module.ProtoIndex, fuse_module.PROTO_PATH = saved


def assert_same_model(kept: onnx.ModelProto, exported: onnx.ModelProto, original: onnx.ModelProto):
    """The proto-keeping export and graphsurgeon's describe one model: the same nodes in the
    same order (op, domain, name, inputs, outputs, attribute values, doc string, metadata), the
    same initializers (by name and content), inputs, outputs, opsets, and value infos of one type;
    the value infos only the kept model has are the original's (graphsurgeon drops those of
    initializers)."""
    def value(a):
        v = onnx.helper.get_attribute_value(a)
        if isinstance(v, onnx.TensorProto):
            return (v.data_type, onnx.numpy_helper.to_array(v).tobytes(), list(v.dims))
        return v.SerializeToString() if hasattr(v, "SerializeToString") else v

    def node(n):
        attrs = sorted((a.name, value(a)) for a in n.attribute)
        return (n.op_type, n.domain, n.name, list(n.input), list(n.output), attrs, n.doc_string,
                [(p.key, p.value) for p in n.metadata_props])

    a, b = kept.graph, exported.graph
    assert [node(n) for n in a.node] == [node(n) for n in b.node]
    inits = lambda g: {t.name: t.SerializeToString() for t in g.initializer}
    assert inits(a) == inits(b)
    for field in ("input", "output"):  # graphsurgeon drops their metadata; the kept model has the original's
        mine, theirs, own = getattr(a, field), getattr(b, field), getattr(original.graph, field)
        assert [(v.name, v.type.SerializeToString()) for v in mine] == \
            [(v.name, v.type.SerializeToString()) for v in theirs]
        assert [v.SerializeToString() for v in mine] == [v.SerializeToString() for v in own]
    assert sorted((o.domain, o.version) for o in kept.opset_import) == \
        sorted((o.domain, o.version) for o in exported.opset_import)
    types = lambda g: {v.name: v.type.SerializeToString() for v in g.value_info}
    ta, tb = types(a), types(b)
    assert {k: v for k, v in ta.items() if k in tb} == {k: v for k, v in tb.items() if k in ta}
    own = {v.name: v.SerializeToString() for v in original.graph.value_info}
    extra = {v.name: v.SerializeToString() for v in a.value_info if v.name not in tb}
    assert all(own.get(k) == v for k, v in extra.items()), f"value infos of neither: {sorted(set(extra) - set(own))}"
