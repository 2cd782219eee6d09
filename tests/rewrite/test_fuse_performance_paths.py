"""The fast paths of fuse_elu_grad: per-phase timings, node order kept (toposort only when
needed), the garbage collector's state restored, what was dead before survives, strict = bit-exact."""

import gc

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from checks import assert_same_model, fuse_and_check, graphsurgeon_exported, ops
from graphs import Builder, elu_backward, mlp
from ort_ops import ort_io
from ort_ops.domain import IR_VERSION, ONNX_OPSET
from ort_ops.rewrite import RewriteReport, fuse_elu_grad, fuse_training, inspect_elu_grad, lower_elu_grad
from ort_ops.rewrite.validation import session

PHASES = {"scan", "import", "match", "edit", "cleanup", "export"}


def test_report_times_every_phase_but_not_in_json():
    report = RewriteReport()
    fuse_elu_grad(mlp(), report=report)
    assert set(report.timings) == PHASES and all(t >= 0 for t in report.timings.values())
    assert "timings" not in report.to_dict() and "timings" not in report.to_json()


def test_no_elu_graph_only_scans():
    model = mlp()
    keep = [n for n in model.graph.node if n.op_type not in ("Where", "LessOrEqual", "Exp")]
    del model.graph.node[:]
    model.graph.node.extend(keep)
    report = RewriteReport()
    out = fuse_elu_grad(model, report=report)
    assert set(report.timings) == {"scan"}
    assert out is not model and out.SerializeToString() == model.SerializeToString()


@pytest.mark.parametrize("enabled", [True, False])
def test_garbage_collector_state_restored(enabled):
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        fuse_elu_grad(mlp())
        lower_elu_grad(fuse_elu_grad(mlp()))
        inspect_elu_grad(mlp())
        assert gc.isenabled() == enabled
    finally:
        gc.enable() if was else gc.disable()


def _count_toposorts(monkeypatch) -> list:
    import onnx_graphsurgeon as gs

    calls, original = [], gs.Graph.toposort
    def spy(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(gs.Graph, "toposort", spy)
    return calls


def test_node_order_kept_and_elu_grad_takes_the_wheres_place(monkeypatch):
    toposorts = _count_toposorts(monkeypatch)
    model = mlp()
    fused = fuse_elu_grad(model)
    backward = {"LessOrEqual", "Exp", "Where"}
    want = []
    for n in model.graph.node:
        if n.op_type == "Where":
            want.append("EluGrad")
        elif n.op_type in backward or (n.op_type == "Mul" and "exp" in n.input[1]):
            continue
        else:
            want.append(n.op_type)
    assert ops(fused) == want and not toposorts


def test_toposort_when_the_elu_comes_after_its_backward(monkeypatch):
    """The X-based form does not read Y, so a valid graph may list the Elu after the Where."""
    toposorts = _count_toposorts(monkeypatch)
    model = elu_backward("torch", alpha=0.5)
    nodes = list(model.graph.node)
    late = lambda n: n.op_type == "Elu" or n.name.startswith("fwd_out")
    elu = [n for n in nodes if late(n)]
    rest = [n for n in nodes if not late(n)]
    del model.graph.node[:]
    model.graph.node.extend(rest + elu)
    onnx.checker.check_model(model)
    fused, _ = fuse_and_check(model)
    seen = {i.name for i in fused.graph.input} | {t.name for t in fused.graph.initializer}
    for node in fused.graph.node:  # topologically sorted
        assert all(i in seen for i in node.input if i), node
        seen.update(node.output)
    assert toposorts == [1]


def test_originally_dead_node_and_initializer_survive():
    model = mlp()
    model.graph.node.append(helper.make_node("Neg", ["x"], ["dead_neg"], name="dead"))
    model.graph.initializer.append(numpy_helper.from_array(np.zeros(2, np.float32), "dead_init"))
    fused, _ = fuse_and_check(model)
    assert "dead" in [n.name for n in fused.graph.node]
    assert [t.name for t in fused.graph.initializer].count("dead_init") == 1


def test_strict_refuses_input_based_form_even_for_alpha_one():
    """alpha = 1: the <= / < boundary agrees, but dY*exp(X) and dY*(Elu(X) + 1) round differently.

    strict=True means "provably unchanged" = bit-identical, so this site is not fused."""
    model = elu_backward("torch", alpha=1.0)
    report = RewriteReport()
    out = fuse_elu_grad(model, strict=True, report=report)
    assert out.SerializeToString() == model.SerializeToString()
    (site,) = report.rejected
    assert site.reason.startswith("strict: not provably unchanged") and "rounding" in site.reason
    assert not any("boundary" in n for n in site.notes)
    assert any("alpha = 1 too" in n for n in site.notes)
    # ... and the difference is real: the fused graph's dX differs in the last bits somewhere
    fused = fuse_elu_grad(model)
    x = np.linspace(-4, 0, 24, dtype=np.float32).reshape(4, 6)
    feeds = {"X0": x, "dY0": np.ones_like(x)}
    want = ort_io.run(session(model), feeds, ["dX0"])[0]
    got = ort_io.run(session(fused), feeds, ["dX0"])[0]
    assert np.allclose(got, want, rtol=1e-6) and not np.array_equal(got, want)


def test_tensor_read_only_inside_a_subgraph_survives():
    """A node output (and an initializer) used only by an If branch is not dead."""
    model = mlp()
    g = model.graph
    g.node.append(helper.make_node("Neg", ["x"], ["outer_only"], name="outer_src"))
    g.initializer.append(numpy_helper.from_array(np.ones((5, 6), np.float32), "branch_init"))
    branch = lambda name, src: helper.make_graph(
        [helper.make_node("Add", [src, "branch_init"], [name + "_out"], name=name)], name, [],
        [helper.make_tensor_value_info(name + "_out", onnx.TensorProto.FLOAT, [5, 6])])
    g.input.append(helper.make_tensor_value_info("cond", onnx.TensorProto.BOOL, []))
    g.node.append(helper.make_node("If", ["cond"], ["if_out"], name="if",
                                   then_branch=branch("then", "outer_only"),
                                   else_branch=branch("else", "x")))
    g.output.append(helper.make_tensor_value_info("if_out", onnx.TensorProto.FLOAT, [5, 6]))
    onnx.checker.check_model(model, full_check=True)
    fused = fuse_elu_grad(model)
    onnx.checker.check_model(fused, full_check=True)
    assert {"outer_src", "if"} <= {n.name for n in fused.graph.node}
    # (graphsurgeon moves an outer initializer read only by branches into those branches)
    if_node = next(n for n in fused.graph.node if n.op_type == "If")
    for branch_graph in (a.g for a in if_node.attribute):
        assert "branch_init" in {t.name for t in branch_graph.initializer} | {
            t.name for t in fused.graph.initializer}
    assert ops(fused).count("EluGrad") == 1


def test_benchmark_smoke():
    """The benchmark runs end to end on a tiny graph (its onnxscript rule fuses the same sites)."""
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "bench_rewrite.py")
    spec = importlib.util.spec_from_file_location("bench_rewrite", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    pytest.importorskip("onnxscript")
    row = bench.measure(60, 1, True)
    assert row["nodes"] == 60 and row["match+edit"] > 0 and row["gs rt"] > 0
    assert all(name in row for name, _, _ in bench.COLUMNS)


def test_benchmark_against_another_checkout(capsys):
    """``--against DIR`` fuses the same graph with both checkouts in fresh interpreters (here:
    this checkout against itself) and prints both times, their ratio and the sites fused."""
    import importlib.util
    import os

    root = os.path.join(os.path.dirname(__file__), "..", "..")
    spec = importlib.util.spec_from_file_location("bench_rewrite", os.path.join(root, "benchmarks", "bench_rewrite.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.against([60], 1, root)
    row = capsys.readouterr().out.splitlines()[3].split()
    assert row[0] == "60" and float(row[1]) > 0 and float(row[2]) > 0 and row[-1] == "10", row


def _fixture_graphs():
    import glob
    import os

    root = os.path.join(os.path.dirname(__file__), "..", "fixtures")
    return sorted(p for p in glob.glob(os.path.join(root, "*.onnx")) if not p.endswith("_infer.onnx"))


@pytest.mark.parametrize("name", ["mlp", "shared", *[p.rsplit("/", 1)[-1] for p in _fixture_graphs()]])
def test_upstream_cleanup_equals_graphsurgeon_cleanup(name, monkeypatch):
    """The single-graph path (a walk from the edited nodes over the ProtoGraph) removes exactly
    what graphsurgeon's ``cleanup()`` removes from the imported graph (the whole graph's
    liveness): the same fused model, byte for byte."""
    import os

    import ort_ops.rewrite.fuse as fuse_module

    if name == "mlp":
        model = mlp()
    elif name == "shared":  # two sites sharing constants, a dead node that must stay, and a graph output
        model = mlp()
        model.graph.node.append(helper.make_node("Neg", [model.graph.node[0].output[0]], ["dead_before"]))
    else:
        model = onnx.load(os.path.join(os.path.dirname(__file__), "..", "fixtures", name))
    fast = fuse_elu_grad(model)
    assert ops(fast).count("EluGrad") >= 1
    original = fuse_module.cleanup
    monkeypatch.setattr(fuse_module, "cleanup", lambda *a, **k: original(*a, **{**k, "seeds": None}))
    monkeypatch.setattr(fuse_module, "PROTO_PATH", False)
    slow = fuse_elu_grad(model)
    assert fast.SerializeToString() == slow.SerializeToString()


@pytest.mark.parametrize("name", ["mlp", "shared", "initializer_output",
                                  *[p.rsplit("/", 1)[-1] for p in _fixture_graphs()]])
@pytest.mark.parametrize("fuse", [fuse_elu_grad, fuse_training], ids=["fuse_elu_grad", "fuse_training"])
def test_kept_protos_equal_graphsurgeon_export(name, fuse):
    """A single graph is written from the original NodeProtos (only new nodes exported): the
    same model as graphsurgeon's export gives, node for node; initializers that only fed the
    fused sites go, one that is also a graph output stays."""
    import os

    if name == "mlp":
        model = mlp()
    elif name == "shared":
        model = mlp()
        model.graph.node.append(helper.make_node("Neg", [model.graph.node[0].output[0]], ["dead_before"]))
    elif name == "initializer_output":
        model = mlp()
        weight = model.graph.initializer[0]
        model.graph.output.append(helper.make_tensor_value_info(weight.name, weight.data_type, list(weight.dims)))
    else:
        model = onnx.load(os.path.join(os.path.dirname(__file__), "..", "fixtures", name))
    kept = fuse(model)
    assert any(n.domain == "ai.ortops" for n in kept.graph.node)
    assert_same_model(kept, graphsurgeon_exported(fuse, model), model)
    onnx.checker.check_model(kept, full_check=True)
    if name == "initializer_output":
        assert weight.name in {t.name for t in kept.graph.initializer}


def _awkward_graph() -> onnx.ModelProto:
    """Every way a tensor gets its dtype / shape in graphsurgeon's import: an initializer that is
    also a graph input, value infos repeated (one without a shape), a symbolic and an unknown dim,
    a bfloat16 initializer, an omitted optional input, a Constant with a tensor attribute, an
    unnamed node, a tensor read twice by one node, a dangling output."""
    b16 = helper.make_tensor("b16", onnx.TensorProto.BFLOAT16, [2], [1.0, 2.0])
    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    unknown = helper.make_tensor_value_info("u", onnx.TensorProto.FLOAT, ["n", 3])
    unknown.type.tensor_type.shape.dim[0].ClearField("dim_param")
    nodes = [
        helper.make_node("Constant", [], ["c"], name="const", value=numpy_helper.from_array(np.float32(2.0))),
        helper.make_node("Mul", ["x", "c"], ["m"], name="mul"),
        helper.make_node("Add", ["m", "m"], ["u"]),
        helper.make_node("Clip", ["u", "", "c"], ["clipped"], name="clip"),
        helper.make_node("Neg", ["clipped"], ["dangling"], name="neg"),
        helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
    ]
    graph = helper.make_graph(
        nodes, "awkward",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 2]),
         helper.make_tensor_value_info("w", onnx.TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None), helper.make_tensor_value_info(
            "clipped", onnx.TensorProto.FLOAT16, [4])],
        [w, b16],
        value_info=[helper.make_tensor_value_info("m", onnx.TensorProto.FLOAT, None),
                    helper.make_tensor_value_info("m", onnx.TensorProto.FLOAT, ["batch", 2]), unknown])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("name", ["awkward", "mlp", *[p.rsplit("/", 1)[-1] for p in _fixture_graphs()]])
def test_proto_graph_is_what_graphsurgeon_imports(name):
    """The single-graph path's lazy index gives every node and tensor the rules can reach what
    graphsurgeon's import gives it: op, name, domain, attributes, the tensors' class, dtype,
    shape and type, and the same producers and consumers (by node position)."""
    import os

    import onnx_graphsurgeon as gs

    from ort_ops.rewrite.surgery import ProtoGraph, originally_unused

    if name == "awkward":
        model = _awkward_graph()
    elif name == "mlp":
        model = mlp()
    else:
        model = onnx.load(os.path.join(os.path.dirname(__file__), "..", "fixtures", name))
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    imported = gs.import_onnx(copy)
    lazy = ProtoGraph(model)
    assert lazy.single
    position = {id(n): i for i, n in enumerate(imported.nodes)}
    assert len(imported.nodes) == len(model.graph.node)
    for i, want in enumerate(imported.nodes):
        got = lazy.node(i)
        assert (got.op, got.name, got.domain) == (want.op, want.name, want.domain), i
        assert got.attrs == want.attrs, (i, got.attrs, want.attrs)
        for side in ("inputs", "outputs"):
            for g, w in zip(getattr(got, side), getattr(want, side), strict=True):
                assert type(g) is type(w) and g.name == w.name, (i, side, g, w)
                if isinstance(w, gs.Variable):
                    assert (g.dtype, g.shape, g.type) == (w.dtype, w.shape, w.type), (i, side, w.name)
                else:
                    assert g.shape == w.shape and g.dtype == w.dtype and g.data_location == w.data_location
                if w.name:
                    assert [n.index for n in g.inputs] == [position[id(n)] for n in w.inputs], w.name
                    assert [n.index for n in g.outputs] == [position[id(n)] for n in w.outputs], w.name
    assert [t.name for t in lazy.outputs] == [t.name for t in imported.outputs]
    # what nothing read before the edit (it must survive it): as from the graphsurgeon graph
    dangling, initializers = lazy.originally_unused()
    unused = originally_unused(imported, model.graph)
    assert [name for name, _ in dangling] == [t.name for t in unused.outputs]
    assert [i for _, i in dangling] == [position[id(t.inputs[0])] for t in unused.outputs]
    assert initializers == unused.initializers
    if name == "awkward":
        assert [name for name, _ in dangling] == ["dangling"] and initializers == {"b16"}
    lazy.release(())


@pytest.mark.parametrize("kind, single", [("none", True), ("graph", False), ("graphs", False),
                                          ("empty_graphs", False), ("untyped_g", True)])
def test_scan_tells_the_index_what_it_would_have_read(kind, single):
    """fuse hands the scan's ``nested`` to ProtoGraph, which then reads no attributes: a graph is
    single (the NodeProto path) with the hint exactly when it is without it."""
    from ort_ops.rewrite.graph_scopes import scan
    from ort_ops.rewrite.surgery import ProtoGraph

    body = helper.make_graph([helper.make_node("Identity", ["x"], ["z"])], "body", [],
                             [helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [1])])
    node = helper.make_node("Custom", ["x"], ["y"], domain="test.domain")
    attr = node.attribute.add(name="body")
    if kind == "graph":
        attr.type = onnx.AttributeProto.GRAPH
        attr.g.CopyFrom(body)
    elif kind == "graphs":
        attr.type = onnx.AttributeProto.GRAPHS
        attr.graphs.append(body)
    elif kind == "empty_graphs":
        attr.type = onnx.AttributeProto.GRAPHS
    elif kind == "untyped_g":  # a writer that left the type unset (the scan still walks the body)
        attr.g.CopyFrom(body)
    else:
        attr.type, attr.i = onnx.AttributeProto.INT, 1
    x, y = (helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [1]) for n in ("x", "y"))
    model = helper.make_model(helper.make_graph([node, helper.make_node("Relu", ["y"], ["r"])], "g", [x],
                                                [helper.make_tensor_value_info("r", onnx.TensorProto.FLOAT, [1])]))
    found = scan(model)
    assert ("Identity" in found.op_types) == (kind in ("graph", "graphs", "untyped_g"))
    assert ProtoGraph(model).single is single
    assert ProtoGraph(model, found.nested).single is single


def _deep_gradient_chain(depth: int) -> onnx.ModelProto:
    """An ELU backward whose upstream gradient comes through ``depth`` Adds from a typed graph
    input; no value info for any intermediate tensor."""
    zero, c = numpy_helper.from_array(np.array(0.0, np.float32), "zero"), numpy_helper.from_array(
        np.array(0.5, np.float32), "c")
    nodes, g = [], "g0"
    for k in range(depth):
        nodes.append(helper.make_node("Add", [g, "c"], [f"g{k + 1}"]))
        g = f"g{k + 1}"
    nodes += [helper.make_node("Elu", ["x"], ["y"]), helper.make_node("LessOrEqual", ["x", "zero"], ["le"]),
              helper.make_node("Exp", ["x"], ["e"]), helper.make_node("Mul", [g, "e"], ["m"]),
              helper.make_node("Where", ["le", "m", g], ["dx"])]
    vi = lambda n: helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [3, 5])
    graph = helper.make_graph(nodes, "deep", [vi("x"), vi("g0")], [vi("y"), vi("dx")], [zero, c])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])
    model.ir_version = IR_VERSION
    return model


@pytest.mark.parametrize("proto_path", [True, False])
def test_types_and_shapes_of_a_deep_chain_need_no_shape_inference(proto_path, monkeypatch):
    """The dtype and shape walks go up a whole chain (memoized, so linear over a graph) instead of
    giving up after a fixed number of steps and running ONNX shape inference over the whole
    model (which a 100k-node graph pays for with about half a second)."""
    import ort_ops.rewrite.fuse as fuse_module
    from ort_ops.rewrite import graph_view

    def no_inference(model):
        raise AssertionError("shape inference ran")

    monkeypatch.setattr(fuse_module, "PROTO_PATH", proto_path)
    monkeypatch.setattr(graph_view, "_inference", no_inference)
    fused, report = fuse_and_check(_deep_gradient_chain(300), remnants=("Where", "Exp", "LessOrEqual"))
    (site,) = report.fused
    assert site.dtype == "float32" and site.grads == "g300" and not any("expanded" in n for n in site.notes)


@pytest.mark.parametrize("through", ["direct", "Identity", "Mul by 1"])
def test_mul_anchored_patterns_read_only_muls_that_may_hold_their_producer(through, monkeypatch):
    """mul_where_factor and min_add_mul first ask the index whether a Mul's operand can be made
    by a Where / Add (directly or through what strip() looks through): the other Muls of a
    single graph are never linked; the site itself is still found through Identity / Mul-by-1."""
    from ort_ops.rewrite import surgery

    b = Builder()
    y = b.op("Elu", "X", alpha=0.5)
    w = b.op("Where", b.op("Less", y, b.const(0.0)), b.op("Add", y, b.const(0.5)), b.const(1.0))
    if through == "Identity":
        w = b.op("Identity", w)
    elif through == "Mul by 1":
        w = b.op("Mul", w, b.const(1.0))
    dx = b.op("Mul", "dY", w)
    others = [b.op("Mul", "A", "B") for _ in range(5)]
    vi = lambda n: helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [4, 6])
    model = b.model([vi("X"), vi("dY"), vi("A"), vi("B")], [vi(y), vi(dx), *map(vi, others)])
    model.graph.node.append(helper.make_node("Min", ["A", "B"], ["unused_min"], name="min"))  # min_add_mul tries too
    linked, link = [], surgery.ProtoGraph.link

    def spy(self, node):
        linked.append(node.index)
        return link(self, node)

    monkeypatch.setattr(surgery.ProtoGraph, "link", spy)
    fused, report = fuse_and_check(model, remnants=("Where", "Less"))
    assert [s.rule for s in report.fused] == ["mul_where_factor"]
    other_at = {i for i, n in enumerate(model.graph.node) if n.output[0] in others}
    assert len(other_at) == 5 and not other_at & set(linked)
