"""Assertions the rewrite tests share: op list, checker, ORT before/after, reference evaluator."""

from __future__ import annotations

import onnx

from ort_ops import ort_io
from ort_ops.reference import OPS
from rewrite import RewriteReport, fuse_elu_grad
from rewrite.validation import compare, random_inputs, session

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
