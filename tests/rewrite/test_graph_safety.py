"""Never an invalid model, never a silent skip: unnamed nodes, names that collide, subgraphs
(If/Loop bodies, model-local functions), broadcasting operands, constants in external data, and
the pre-filter built from the rules."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from checks import fuse_and_check, ops
from graphs import Builder, elu_backward
from ort_ops import ort_io
from ort_ops.domain import DOMAIN, IR_VERSION, ONNX_OPSET, OPSET_VERSION
from ort_ops.rewrite import RULES, RewriteReport, fuse_elu_grad, has_candidates, lower_elu_grad
from ort_ops.rewrite.validation import session


def _all_nodes(model):
    from ort_ops.rewrite.graph_scopes import all_node_lists

    return [n for _, nodes in all_node_lists(model) for n in nodes]


def test_unnamed_nodes_get_unique_names_and_the_model_loads():
    model = elu_backward("torch", layers=2)
    for n in model.graph.node:
        n.name = ""
    fused, report = fuse_and_check(model, n_sites=2)
    names = [n.name for n in fused.graph.node if n.op_type == "EluGrad"]
    assert len(set(names)) == 2 and all(names)


def test_new_names_do_not_collide_with_existing_ones():
    model = elu_backward("torch")
    where = next(n for n in model.graph.node if n.op_type == "Where")
    # a node already carries the name the EluGrad would get
    identity = next(n for n in model.graph.node if n.op_type == "Identity")
    identity.name = f"{where.name}/EluGrad"
    fused, _ = fuse_and_check(model)
    names = [n.name for n in fused.graph.node]
    assert len(names) == len(set(names))


def _if_model(where_inside: bool, elu_inside: bool):
    """Backward (and/or the Elu) inside an If branch; X, dY from the outer graph."""
    T, shape = TP.FLOAT, [3, 4]
    vi = lambda n: helper.make_tensor_value_info(n, T, shape)
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    body_nodes, outer_nodes = [], []
    elu = helper.make_node("Elu", ["X"], ["Y"], name="elu", alpha=0.5)
    backward = [
        helper.make_node("LessOrEqual", ["X", "zero"], ["le"], name="le"),
        helper.make_node("Exp", ["X"], ["e"], name="exp"),
        helper.make_node("Mul", ["dY", "half"], ["dya"], name="mul_alpha"),
        helper.make_node("Mul", ["dya", "e"], ["m"], name="mul"),
        helper.make_node("Where", ["le", "m", "dY"], ["dX"], name="where"),
    ]
    (body_nodes if elu_inside else outer_nodes).append(elu)
    (body_nodes if where_inside else outer_nodes).extend(backward)
    body_nodes.append(helper.make_node("Identity", ["dX" if where_inside else "Y"], ["branch_out"], name="id"))
    then = helper.make_graph(body_nodes, "then", [], [vi("branch_out")])
    other = helper.make_graph([helper.make_node("Identity", ["X"], ["other_out"], name="id2")], "else", [],
                              [vi("other_out")])
    outer_nodes.append(helper.make_node("If", ["c"], ["z"], name="if", then_branch=then, else_branch=other))
    outputs = [vi("z")] + ([vi("dX")] if not where_inside else []) + ([vi("Y")] if not elu_inside else [])
    half = numpy_helper.from_array(np.array(0.5, np.float32), "half")
    graph = helper.make_graph(outer_nodes, "g", [helper.make_tensor_value_info("c", TP.BOOL, []), vi("X"), vi("dY")],
                              outputs, [zero, half])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])
    model.ir_version = IR_VERSION
    return model


def _run(model, feeds):
    return ort_io.run(session(model), feeds)


def _feeds(cond):
    rng = np.random.default_rng(0)
    return {"c": np.array(cond), "X": rng.standard_normal((3, 4)).astype(np.float32),
            "dY": rng.standard_normal((3, 4)).astype(np.float32)}


def test_elu_only_inside_a_branch_is_not_used_by_the_outer_backward():
    """The outer backward's X also feeds an Elu inside an If branch: that Elu's output does not
    exist outside the branch, so the site is rejected with the reason (the model stays valid)."""
    model = _if_model(where_inside=False, elu_inside=True)
    onnx.checker.check_model(model, full_check=True)
    report = RewriteReport()
    fused = fuse_elu_grad(model, report=report)
    onnx.checker.check_model(fused, full_check=True)
    (site,) = report.rejected
    assert "does not feed an Elu node" in site.reason
    assert "EluGrad" not in [n.op_type for n in _all_nodes(fused)]


@pytest.mark.parametrize("elu_inside", [True, False])
def test_backward_inside_an_if_branch_is_fused_there(elu_inside):
    model = _if_model(where_inside=True, elu_inside=elu_inside)
    report = RewriteReport()
    fused = fuse_elu_grad(model, report=report)
    (site,) = report.fused
    assert site.scope.startswith("If if/then_branch")
    onnx.checker.check_model(fused, full_check=True)
    body = next(n for n in fused.graph.node if n.op_type == "If").attribute
    then = next(a.g for a in body if a.name == "then_branch")
    assert [n.op_type for n in then.node].count("EluGrad") == 1 and "Where" not in [n.op_type for n in then.node]
    assert any(o.domain == DOMAIN for o in fused.opset_import)
    for cond in (True, False):
        want, got = _run(model, _feeds(cond)), _run(fused, _feeds(cond))
        for w, g in zip(want, got):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    lowered = lower_elu_grad(fused)  # lower reaches into the branch and drops the import
    assert "EluGrad" not in [n.op_type for n in _all_nodes(lowered)]
    assert not any(o.domain == DOMAIN for o in lowered.opset_import)
    onnx.checker.check_model(lowered, full_check=True)
    for w, g in zip(_run(fused, _feeds(True)), _run(lowered, _feeds(True))):
        np.testing.assert_array_equal(g, w)


def test_lower_reaches_into_a_loop_body():
    model = _if_model(where_inside=True, elu_inside=True)
    fused = fuse_elu_grad(model)
    if_node = next(n for n in fused.graph.node if n.op_type == "If")
    then = next(a.g for a in if_node.attribute if a.name == "then_branch")
    # the same body as a Loop body (iteration count 1)
    loop_body = helper.make_graph(
        list(then.node) + [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="cond_id")], "body",
        [helper.make_tensor_value_info("i", TP.INT64, []), helper.make_tensor_value_info("cond_in", TP.BOOL, [])],
        [helper.make_tensor_value_info("cond_out", TP.BOOL, []), then.output[0]])
    count = numpy_helper.from_array(np.array(1, np.int64), "one_iter")
    loop = helper.make_node("Loop", ["one_iter", "c"], ["z_scan"], name="loop", body=loop_body)
    g = fused.graph
    g.initializer.append(count)
    del g.node[[n.name for n in g.node].index("if")]
    g.node.append(loop)
    g.output[0].name = "z_scan"
    g.output[0].CopyFrom(helper.make_tensor_value_info("z_scan", TP.FLOAT, [1, 3, 4]))
    onnx.checker.check_model(fused, full_check=True)
    lowered = lower_elu_grad(fused)
    assert "EluGrad" not in [n.op_type for n in _all_nodes(lowered)]
    onnx.checker.check_model(lowered, full_check=True)
    feeds = _feeds(True)
    np.testing.assert_array_equal(_run(lowered, feeds)[0], _run(fused, feeds)[0])


def _function_model():
    """The ELU backward inside a model-local function called by the main graph."""
    b = [helper.make_node("Elu", ["x"], ["y"], alpha=1.0),
         helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0.0, np.float32))),
         helper.make_node("LessOrEqual", ["y", "zero"], ["le"]),
         helper.make_node("Constant", [], ["one"], value=numpy_helper.from_array(np.array(1.0, np.float32))),
         helper.make_node("Add", ["y", "one"], ["t"]),
         helper.make_node("Mul", ["dy", "t"], ["m"]),
         helper.make_node("Where", ["le", "m", "dy"], ["dx"])]
    fn = helper.make_function("local", "EluStep", ["x", "dy"], ["y", "dx"], b,
                              [helper.make_opsetid("", ONNX_OPSET)])
    vi = lambda n: helper.make_tensor_value_info(n, TP.FLOAT, [2, 5])
    graph = helper.make_graph([helper.make_node("EluStep", ["X", "dY"], ["Y", "dX"], domain="local", name="call")],
                              "g", [vi("X"), vi("dY")], [vi("Y"), vi("dX")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET),
                                                    helper.make_opsetid("local", 1)], functions=[fn])
    model.ir_version = IR_VERSION
    return model


def test_backward_inside_a_local_function_is_fused_with_its_opset_import():
    model = _function_model()
    onnx.checker.check_model(model, full_check=True)
    report = RewriteReport()
    fused = fuse_elu_grad(model, report=report)
    (site,) = report.fused
    assert site.scope == "function local::EluStep" and site.exact  # shapes unknown: expanded
    fn = fused.functions[0]
    assert "EluGrad" in [n.op_type for n in fn.node] and "Where" not in [n.op_type for n in fn.node]
    assert any(o.domain == DOMAIN and o.version == OPSET_VERSION for o in fn.opset_import)
    onnx.checker.check_model(fused, full_check=True)
    rng = np.random.default_rng(1)
    feeds = {"X": rng.standard_normal((2, 5)).astype(np.float32), "dY": rng.standard_normal((2, 5)).astype(np.float32)}
    for w, g in zip(_run(model, feeds), _run(fused, feeds)):
        np.testing.assert_array_equal(g, w)
    lowered = lower_elu_grad(fused)
    assert not any(o.domain == DOMAIN for o in lowered.functions[0].opset_import)
    for w, g in zip(_run(model, feeds), _run(lowered, feeds)):
        np.testing.assert_array_equal(g, w)


def test_broadcasting_operands_are_expanded_to_one_shape():
    """dY of shape [1] against Y of shape [4, 6]: EluGrad needs equal shapes, so both operands
    are expanded to [4, 6] (what the broadcasting original computes)."""
    b = Builder()
    y = b.op("Elu", "X")
    dx = b.op("Where", b.op("Less", y, b.const(0.0)), b.op("Mul", "dY", b.op("Add", y, b.const(1.0))), "dY")
    vi = lambda n, s: helper.make_tensor_value_info(n, TP.FLOAT, s)
    model = b.model([vi("X", [4, 6]), vi("dY", [1])], [vi(y, [4, 6]), vi(dx, [4, 6])])
    onnx.checker.check_model(model, full_check=True)
    fused, report = fuse_and_check(model, ["Elu", "EluGrad", "Expand", "Expand"])
    assert "expanded to [4, 6]" in " ".join(report.fused[0].notes)


def test_operands_that_cannot_be_one_shape_are_rejected_with_the_reason():
    b = Builder()
    y = b.op("Elu", "X")
    dx = b.op("Where", b.op("Less", y, b.const(0.0)), b.op("Mul", "dY", b.op("Add", y, b.const(1.0))), "dY")
    vi = lambda n, s: helper.make_tensor_value_info(n, TP.FLOAT, s)
    model = b.model([vi("X", [4, 1]), vi("dY", [1, 6])], [vi(y, [4, 1]), vi(dx, [4, 6])])
    report = RewriteReport()
    fused = fuse_elu_grad(model, report=report)
    # [4, 1] and [1, 6] broadcast to [4, 6]: that is the Where's shape, so it is fused too
    assert len(report.fused) == 1
    onnx.checker.check_model(fused, full_check=True)
    model2 = b.model([vi("X", [4, 3]), vi("dY", [5, 3])], [vi(y, [4, 3]), vi(dx, [4, 3])])
    report2 = RewriteReport()
    fuse_elu_grad(model2, report=report2)
    assert "cannot be broadcast" in report2.rejected[0].reason


def test_constants_in_external_data_are_read(tmp_path):
    model = elu_backward("torch", alpha=0.5)
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location="m.data",
              size_threshold=0)
    on_disk = onnx.load(path, load_external_data=False)
    assert any(t.data_location == TP.EXTERNAL for t in on_disk.graph.initializer)
    report = RewriteReport()
    fused = fuse_elu_grad(path, report=report)  # a path: its folder holds the data
    assert len(report.fused) == 1 and report.fused[0].alpha == 0.5
    report2 = RewriteReport()
    fuse_elu_grad(on_disk, report=report2)  # a proto without its folder: rejected, with the reason
    (site,) = report2.rejected
    assert "external data" in site.reason and "folder is unknown" in site.reason
    report3 = RewriteReport()
    fuse_elu_grad(on_disk, report=report3, base_dir=str(tmp_path))
    assert len(report3.fused) == 1
    (tmp_path / "m.data").write_bytes(b"")  # truncated: the reason names the file
    report4 = RewriteReport()
    fuse_elu_grad(on_disk, report=report4, base_dir=str(tmp_path))
    assert "could not be read" in report4.rejected[0].reason
    assert "EluGrad" in ops(fused)


def mul_where_graph():
    """``dY * Where(Y < 0, Y + 0.5, 1)`` (the golden's spelling)."""
    b = Builder()
    y = b.op("Elu", "X", alpha=0.5)
    w = b.op("Where", b.op("Less", y, b.const(0.0)), b.op("Add", y, b.const(0.5)), b.const(1.0))
    dx = b.op("Mul", "dY", w)
    vi = lambda n: helper.make_tensor_value_info(n, TP.FLOAT, [4, 6])
    return b.model([vi("X"), vi("dY")], [vi(y), vi(dx)])


def test_mul_where_factor_form():
    fused, report = fuse_and_check(mul_where_graph(), ["Elu", "EluGrad"])
    (site,) = report.fused
    assert site.rule == "mul_where_factor" and site.alpha == 0.5 and not site.exact


def test_prefilter_is_built_from_the_rules():
    """has_candidates asks each rule: a graph a rule fuses passes the pre-filter, and a graph
    without one of each op group the rule needs cannot (the rule could not match it)."""
    graphs = {"where_input_exp": elu_backward("torch"), "where_output_add": elu_backward("less"),
              "min_add_mul": elu_backward("min"), "foreign_elu_grad": elu_backward("tf"),
              "mul_where_factor": mul_where_graph()}
    for rule in RULES:
        model = graphs[rule.name]
        report = RewriteReport()
        fuse_elu_grad(model, report=report)
        assert [s.rule for s in report.fused] == [rule.name]
        from ort_ops.rewrite.graph_scopes import op_types

        present = op_types(model)
        assert rule.could_match(present) and has_candidates(model)
        for group in rule.needs:  # every group the rule declares is really in its graph
            assert group & present, (rule.name, group)
    assert not has_candidates(helper.make_model(helper.make_graph([], "empty", [], [])))


