"""The placement pass (rewrite.placement) on the CPU side: which node goes where and why, the
inverse, idempotence, and the tables it relies on. Running placed graphs on CANN:
tests/cann/test_placed_ops_on_cann.py and tests/cann/test_placement_on_cann.py."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from ort_ops.domain import CANN_DOMAIN, DOMAIN, IR_VERSION
from ort_ops.library import cann_op_unavailable, has_cann_kernels, kernel_signatures
from ort_ops.rewrite.placement import PlacementReport, ep_runs, place, unplace
from ort_ops.rewrite.placement.cann_ep_kernels import KERNELS as EP_KERNELS
from ort_ops.rewrite.placement.ops import RULES
from ort_ops.rewrite.placement.ops.cast import DESTINATIONS
from ort_ops.rewrite.placement.ops.constant_of_shape import NAMES as CONSTANT_OF_SHAPE_NAMES

pytestmark = pytest.mark.skipif(not has_cann_kernels(), reason="library built without CANN kernels")
OPSET = 20


def model_of(nodes, inputs, outputs, inits=(), opset=OPSET, extra_opsets=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), *extra_opsets])
    m.ir_version = IR_VERSION
    return m


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def where(report: PlacementReport) -> dict[str, tuple[str, str | None]]:
    return {n.node: (n.where, n.reason) for n in report.nodes}


def mixed_model():
    """One node per decision the pass makes; names say what is expected."""
    inits = [
        numpy_helper.from_array(np.zeros((8, 4), np.float32), "w"),
        numpy_helper.from_array(np.zeros(4, np.float32), "bias"),
        numpy_helper.from_array(np.array([4, 8], np.int64), "shape"),
        numpy_helper.from_array(np.array([0], np.int64), "zero"),
        numpy_helper.from_array(np.array([2], np.int64), "two"),
        numpy_helper.from_array(np.array([1], np.int64), "one"),
        numpy_helper.from_array(np.array([2, 3], np.int64), "cos_shape"),
    ]
    nodes = [
        helper.make_node("Gemm", ["x", "w", "bias"], ["gemm"], name="gemm_placed"),
        helper.make_node("Gemm", ["x", "w", "bias"], ["gemm2"], name="gemm_alpha_placed", alpha=2.0),
        helper.make_node("Add", ["gemm", "gemm2"], ["same"], name="add_same_shape_ep"),
        helper.make_node("Add", ["gemm", "bias"], ["bcast"], name="add_broadcast_placed"),
        helper.make_node("Reshape", ["bcast", "shape"], ["r"], name="reshape_placed"),
        helper.make_node("Cast", ["labels"], ["lf"], name="cast_placed", to=TP.FLOAT),
        helper.make_node("MaxPool", ["img"], ["pooled", "idx"], name="maxpool_indices_cpu",
                         kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1]),
        helper.make_node("MaxPool", ["img"], ["pooled2"], name="maxpool_placed", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Slice", ["gemm", "zero", "two", "one", "two"], ["sl"], name="slice_step2_placed"),
        helper.make_node("GatherElements", ["gemm", "gidx"], ["ga"], name="gather_elements_placed", axis=1),
        helper.make_node("Hardmax", ["gemm"], ["hm"], name="hardmax_cpu"),
        helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul_ep"),
        helper.make_node("EluGrad", ["gemm", "gemm2"], ["eg"], name="elugrad_ortops", domain=DOMAIN),
        helper.make_node("ConstantOfShape", ["cos_shape"], ["filled"], name="cos_folded",
                         value=numpy_helper.from_array(np.array([-1.5], np.float32))),
        helper.make_node("Mul", ["filled", "z"], ["sq"], name="mul_same_shape_ep"),
        # computed from constants only: left to ONNX Runtime's constant folding
        helper.make_node("Mul", ["filled", "filled"], ["sq2"], name="mul_of_constants_folded"),
        helper.make_node("Shape", ["x"], ["xs"], name="shape_of_static_folded"),
        helper.make_node("Concat", ["xs", "one"], ["xs1"], name="concat_of_folded_folded", axis=0),
    ]
    inputs = [vi("x", TP.FLOAT, [2, 8]), vi("labels", TP.INT64, [2]), vi("img", TP.FLOAT, [1, 2, 4, 4]),
              vi("gidx", TP.INT64, [2, 4]), vi("z", TP.FLOAT, [2, 3])]
    outputs = [vi(n, TP.FLOAT, None) for n in ("same", "r", "lf", "pooled", "idx", "pooled2", "sl", "ga", "hm",
                                               "mm", "eg", "sq", "sq2")] + [vi("xs1", TP.INT64, None)]
    outputs[4] = vi("idx", TP.INT64, None)
    return model_of(nodes, inputs, outputs, inits, extra_opsets=[helper.make_opsetid(DOMAIN, 1)])


def test_each_node_goes_where_its_kernels_are():
    report = PlacementReport()
    placed = place(mixed_model(), soc="Ascend910B1", report=report)
    got = where(report)
    for name, (place_, reason) in got.items():
        assert place_ == {"placed": "placed", "cpu": "cpu", "ep": "cann_ep", "ortops": "ortops",
                          "folded": "folded"}[name.rsplit("_", 1)[1]], (name, place_, reason)
    assert "takes pads equal at both ends" in got["maxpool_indices_cpu"][1]
    routes = {n.node: n.cann_ops for n in report.nodes}  # Atlas A2: the V2 route, not 950's GatherElements
    assert routes["gemm_alpha_placed"] == ("MatMulV2", "Muls", "Axpy")
    assert routes["slice_step2_placed"] == ("Slice", "StridedSlice")
    assert routes["gather_elements_placed"] == ("ClipByValueV2", "Cast", "GatherElementsV2")
    assert "no CANN kernel" in got["hardmax_cpu"][1]
    by_name = {n.name: n for n in placed.graph.node}
    assert by_name["cast_placed"].op_type == "CastToFloat" and by_name["cast_placed"].domain == CANN_DOMAIN
    assert {(n.op_type, n.domain) for n in placed.graph.node if n.name.endswith("_ep")} <= {
        ("Add", ""), ("MatMul", ""), ("Mul", "")}
    assert any(o.domain == CANN_DOMAIN for o in placed.opset_import)


def test_constant_of_shape_is_folded_into_its_value():
    placed = place(mixed_model(), soc=None)
    filled = next(t for t in placed.graph.initializer if t.name == "filled")
    np.testing.assert_array_equal(numpy_helper.to_array(filled), np.full((2, 3), -1.5, np.float32))
    assert not any(n.op_type == "ConstantOfShape" for n in placed.graph.node)


def test_soc_decides_with_the_library_table():
    # Ascend 950 has every op of the table; 310B lacks e.g. ReduceSum and GatherElements.
    assert cann_op_unavailable("Ascend950PR", "GatherElements") is None
    assert cann_op_unavailable("Ascend910B1", "GatherElements") is not None
    assert cann_op_unavailable("Ascend310B1", "ReduceSum") is not None
    assert cann_op_unavailable("Ascend310P3", "Less") is not None
    assert cann_op_unavailable("Ascend910B1", "Less") is None
    assert cann_op_unavailable("SomethingElse", "EluGrad") is None  # unknown SoCs: assume available
    report = PlacementReport()
    place(mixed_model(), soc="Ascend950PR", report=report)
    assert where(report)["gather_elements_placed"][0] == "placed"
    assert {n.node: n.cann_ops for n in report.nodes}["gather_elements_placed"] == ("Less", "Add", "SelectV2",
                                                                                       "GatherElements")
    report = PlacementReport()
    place(mixed_model(), soc="Ascend310P3", report=report)  # neither route's ops
    gather = where(report)["gather_elements_placed"]
    assert gather[0] == "cpu" and "is not available on Ascend310P3" in gather[1], gather
    report = PlacementReport()
    place(mixed_model(), soc="Ascend310B1", report=report)
    # the CANN EP's own Add kernel still claims it (and would fail there: the README says x)
    add = where(report)["add_broadcast_placed"]
    assert add[0] == "cann_ep" and "not placed: CANN op Add is not available on Ascend310B1" in add[1]
    assert where(report)["reshape_placed"][0] == "placed"  # a device copy: no CANN op needed


def test_unplace_is_the_exact_inverse_and_place_is_idempotent():
    m = mixed_model()
    del m.graph.node[13:]  # (no ConstantOfShape: folding is not undone)
    before = m.SerializeToString()
    placed = place(m, soc="Ascend950PR")
    assert m.SerializeToString() == before, "the input model was mutated"
    assert unplace(placed).SerializeToString() == before  # (node domains are left unset, as here)
    assert place(placed, soc="Ascend950PR").SerializeToString() == placed.SerializeToString()


@pytest.mark.parametrize("fixture", ["mlp_elu_fp32", "cnn_elu_fp32", "mlp_elu_fp16"])
def test_placed_training_graphs_pass_the_checker(fixture):
    from models.fixtures import path_of

    model = onnx.load(path_of(fixture))
    placed = place(model, soc="Ascend950PR")
    onnx.checker.check_model(placed, full_check=True)
    assert sum(n.domain == CANN_DOMAIN for n in placed.graph.node) > 10


def test_old_opset_forms_are_not_placed():
    nodes = [helper.make_node("ReduceSum", ["x"], ["y"], name="rs", axes=[1], keepdims=0),
             helper.make_node("Squeeze", ["x"], ["z"], name="sq", axes=[0])]
    m = model_of(nodes, [vi("x", TP.FLOAT, [1, 3])], [vi("y", TP.FLOAT, None), vi("z", TP.FLOAT, None)], opset=11)
    report = PlacementReport()
    place(m, report=report)
    assert all(n.where == "cpu" and "opset 13+" in n.reason for n in report.nodes), report.summary()


def test_unknown_input_types_are_named():
    m = model_of([helper.make_node("Exp", ["x"], ["y"], name="exp")], [helper.make_value_info("x", onnx.TypeProto())],
                 [vi("y", TP.FLOAT, None)])
    report = PlacementReport()
    place(m, report=report)
    assert report.nodes[0].where == "cpu" and "types unknown" in report.nodes[0].reason


def test_dtype_without_kernel_is_named():
    m = model_of([helper.make_node("Exp", ["x"], ["y"], name="exp")], [vi("x", TP.DOUBLE, [3])],
                 [vi("y", TP.DOUBLE, None)])
    report = PlacementReport()
    place(m, report=report)
    assert report.nodes[0].where == "cpu" and "no ai.ortops.cann kernel for Exp(double)" in report.nodes[0].reason


def test_gelu_forms():
    """Gelu's two approximations are placed (CANN GeluV2 takes the same attribute); another value is
    not an ONNX Gelu, and the reason names it; 200I/500 A2 has no GeluV2."""
    nodes = [helper.make_node("Gelu", ["x"], [f"y{i}"], name=f"gelu_{a}", approximate=a)
             for i, a in enumerate(("none", "tanh", "fast"))]
    m = model_of(nodes, [vi("x", TP.FLOAT, [3])], [vi(f"y{i}", TP.FLOAT, None) for i in range(3)])
    report = PlacementReport()
    placed = place(m, report=report)
    got = where(report)
    assert got["gelu_none"][0] == got["gelu_tanh"][0] == "placed", report.summary()
    assert got["gelu_fast"] == ("cpu", "approximate='fast' (ONNX has 'none' and 'tanh')"), report.summary()
    assert [helper.get_attribute_value(n.attribute[0]) for n in placed.graph.node[:2]] == [b"none", b"tanh"]
    report = PlacementReport()
    place(model_of(nodes[:1], [vi("x", TP.FLOAT, [3])], [vi("y0", TP.FLOAT, None)]), soc="Ascend310B1", report=report)
    assert report.nodes[0].where == "cpu" and "GeluV2" in report.nodes[0].reason, report.summary()


def test_control_flow_bodies_are_placed_and_unplaced():
    body = helper.make_graph([helper.make_node("Exp", ["x"], ["y"], name="exp")], "body", [], [vi("y", TP.FLOAT, [3])])
    m = model_of([helper.make_node("If", ["c"], ["y"], name="if", then_branch=body, else_branch=body)],
                 [vi("c", TP.BOOL, []), vi("x", TP.FLOAT, [3])], [vi("y", TP.FLOAT, [3])])
    report = PlacementReport()
    placed = place(m, report=report)
    assert where(report)["if"][0] == "cpu" and "its bodies are placed" in where(report)["if"][1]
    assert where(report)["if/then_branch/exp"] == where(report)["if/else_branch/exp"] == ("placed", None)
    assert [a.g.node[0].domain for a in placed.graph.node[0].attribute] == [CANN_DOMAIN, CANN_DOMAIN]
    assert unplace(placed) == m


def test_ort_version_matching_of_the_cann_eps_kernels():
    # Facts checked on onnxruntime-cann 1.24.4 (issue 13): Reshape/Cast/Transpose of opset 20 stay
    # on the CPU (their kernels' opsets are exactly 14/13/1), MatMul 13+ and Mul 14+ run on CANN,
    # Gemm only for float16.
    assert not ep_runs("Cast", 20, "float32") and ep_runs("Cast", 13, "float32")
    assert not ep_runs("Reshape", 20, "float32") and ep_runs("Reshape", 14, "float32")
    assert not ep_runs("Transpose", 20, "float32")
    assert ep_runs("MatMul", 20, "float32") and ep_runs("Mul", 20, "float32")
    assert not ep_runs("Gemm", 20, "float32") and ep_runs("Gemm", 13, "float16")
    assert not ep_runs("Exp", 20, "float32") and ep_runs("Exp", 20, "float16")


def test_every_rule_has_a_kernel_and_every_kernel_a_rule():
    placed_ops = {k.op for k in kernel_signatures() if k.domain == CANN_DOMAIN}
    names = set()
    for op in RULES:
        names |= set(DESTINATIONS.values()) if op == "Cast" else \
            set(CONSTANT_OF_SHAPE_NAMES.values()) if op == "ConstantOfShape" else {op}
    assert names == placed_ops


# --- Broadcasting arithmetic never reaches the CANN EP's binary kernel (issue 19, item 1) --------

# The dtypes the CANN EP's Add/Sub/Mul/Div kernels take at opset 14+ (cann_ep_kernels.py), + bfloat16.
EP_ARITH = {op: [*next(types for first, _, types in EP_KERNELS[op] if first == 14), "bfloat16"]
            for op in ("Add", "Sub", "Mul", "Div")}
ELEM = {name: getattr(TP, key) for name, key in (
    ("float16", "FLOAT16"), ("float32", "FLOAT"), ("float64", "DOUBLE"), ("bfloat16", "BFLOAT16"), ("int8", "INT8"),
    ("int16", "INT16"), ("int32", "INT32"), ("int64", "INT64"), ("uint8", "UINT8"), ("uint16", "UINT16"))}
FLOATS = {"float16", "float32", "float64", "bfloat16"}


def binary_model(op, elem, a_shape=(4, 1), b_shape=(1, 3)):
    return model_of([helper.make_node(op, ["a", "b"], ["y"], name="n")],
                    [vi("a", elem, a_shape), vi("b", elem, b_shape)], [vi("y", elem, None)])


def expected_cann_op(op, dtype):
    return ("RealDiv" if dtype in FLOATS else "TruncateDiv") if op == "Div" else op


@pytest.mark.parametrize("op,dtype", [(op, t) for op, ts in EP_ARITH.items() for t in ts])
def test_broadcasting_arithmetic_is_placed_for_every_dtype_of_the_eps_kernel(op, dtype):
    report = PlacementReport()
    place(binary_model(op, ELEM[dtype]), report=report)
    (n,) = report.nodes
    assert (n.where, n.cann_ops, n.error) == ("placed", (expected_cann_op(op, dtype),), None), n


@pytest.mark.parametrize("shapes", [((4, 3), (4, 3)), ((4, 1), (1, 3)), ((4, 3), (3,)), (("n", 3), ("n", 3))],
                         ids=["same", "both", "one", "symbolic"])
def test_only_one_static_shape_is_left_to_the_eps_kernel(shapes):
    report = PlacementReport()
    place(binary_model("Sub", TP.FLOAT, *shapes), report=report)
    assert report.nodes[0].where == ("cann_ep" if shapes[0] == (4, 3) and shapes[1] == (4, 3) else "placed")
    assert not report.errors


def test_broadcasting_arithmetic_that_cannot_be_placed_is_an_error_not_the_eps_kernel():
    """skip=Sub leaves a broadcasting Sub to the EP's kernel, which computes B - B: an error naming
    node, dtype and defect, and check() raises it."""
    from ort_ops.rewrite.placement import PlacementError

    report = PlacementReport()
    place(binary_model("Sub", TP.INT8), report=report, skip=("Sub",))
    (n,) = report.errors
    assert n.node == "n" and n.where == "cann_ep" and "Sub(int8)" in n.error and "B op B" in n.error, n
    with pytest.raises(PlacementError, match=r"Sub node 'n': Sub\(int8\): inputs of shapes \[4, 1\] and \[1, 3\]"):
        report.check()


def test_integer_div_on_a_soc_without_truncate_div_is_an_error():
    """310P lacks TruncateDiv and Div (README rows): a broadcasting int32 Div has nowhere to run."""
    report = PlacementReport()
    place(binary_model("Div", TP.INT32), soc="Ascend310P3", report=report)
    (n,) = report.errors
    assert "TruncateDiv is not available on Ascend310P3" in n.error and "B op B" in n.error, n


@pytest.mark.parametrize("opset", [6, 7])
def test_arithmetic_before_opset_7_broadcasts_by_attribute_and_is_not_placed(opset):
    report = PlacementReport()
    place(model_of([helper.make_node("Add", ["a", "b"], ["y"], name="n")],
                   [vi("a", TP.FLOAT, [4, 3]), vi("b", TP.FLOAT, [3])], [vi("y", TP.FLOAT, None)], opset=opset),
          report=report)
    assert report.nodes[0].where == ("cpu" if opset == 6 else "placed"), report.nodes[0]


def broadcast_of(a_shape, b_shape):
    return [a if b == 1 else b for a, b in zip(a_shape, b_shape)]


def if_model(op, elem, a_shape, b_shape):
    """If(c) with ``op(a, b)`` (outer-scope inputs) in both branches."""
    y_shape = broadcast_of(a_shape, b_shape)

    def branch(name):
        return helper.make_graph([helper.make_node(op, ["a", "b"], [f"{name}_y"], name=f"{name}_n")], name, [],
                                 [vi(f"{name}_y", elem, y_shape)])

    return model_of([helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch("then"),
                                      else_branch=branch("else"))],
                    [vi("c", TP.BOOL, []), vi("a", elem, a_shape), vi("b", elem, b_shape)], [vi("y", elem, y_shape)])


def loop_model(op, elem, a_shape, b_shape):
    """Loop(trips) whose body scans out ``op(a, b)`` (outer-scope inputs) each iteration."""
    y_shape = broadcast_of(a_shape, b_shape)
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="cond"),
         helper.make_node(op, ["a", "b"], ["y"], name="body_n")], "body",
        [vi("i", TP.INT64, []), vi("cond_in", TP.BOOL, [])], [vi("cond_out", TP.BOOL, []), vi("y", elem, y_shape)])
    return model_of([helper.make_node("Loop", ["trips", ""], ["ys"], name="loop", body=body)],
                    [vi("trips", TP.INT64, []), vi("a", elem, a_shape), vi("b", elem, b_shape)],
                    [vi("ys", elem, ["trips_n", *y_shape])])


@pytest.mark.parametrize("build,label", [(if_model, "if/then_branch/then_n"), (loop_model, "loop/body/body_n")])
@pytest.mark.parametrize("shapes", [((4, 1), (1, 3)), (("n", 1), (1, "m")), ((4, 3), (4, 3))],
                         ids=["static", "symbolic", "same"])
def test_arithmetic_in_bodies_is_placed_like_the_main_graphs(build, label, shapes):
    model = build("Sub", TP.INT16, *shapes)
    report = PlacementReport()
    placed = place(model, report=report)
    node = where(report)[label]
    assert node[0] == ("cann_ep" if shapes[0] == (4, 3) else "placed"), report.summary()
    assert not report.errors
    assert unplace(placed) == model
    onnx.checker.check_model(placed)


def test_an_ep_kernel_whose_cann_op_the_soc_lacks_is_an_error():
    """Sqrt on Ascend 310P (no CANN Sqrt: README row): not placed, and the EP's Sqrt kernel launches
    the same op, so the report has an error naming SoC, node and op (issue 19, item 7)."""
    from ort_ops.rewrite.placement import PlacementError

    model = model_of([helper.make_node("Sqrt", ["x"], ["y"], name="sqrt")], [vi("x", TP.FLOAT, [3])],
                     [vi("y", TP.FLOAT, [3])])
    report = PlacementReport()
    place(model, soc="Ascend310P3", report=report)
    (n,) = report.errors
    assert n.where == "cann_ep" and "launches the CANN op Sqrt, which is not available on Ascend310P3" in n.error
    with pytest.raises(PlacementError, match=r"(?s)Ascend310P3.*Sqrt node 'sqrt'"):
        report.check()
    report = PlacementReport()
    place(model, soc="Ascend910B1", report=report)
    assert not report.errors and report.nodes[0].where == "placed"


# --- ConstantOfShape folding has a size limit (issue 19, item 14) ---------------------------------


def constant_of_shape_model(dims):
    shape = numpy_helper.from_array(np.array(dims, np.int64), "shape")
    return model_of([helper.make_node("ConstantOfShape", ["shape"], ["y"], name="cos",
                                      value=numpy_helper.from_array(np.array([1.5], np.float32)))],
                    [], [vi("y", TP.FLOAT, None)], inits=[shape])


def test_constant_of_shape_is_folded_up_to_the_limit_only():
    from ort_ops.rewrite.placement import MAX_CONSTANT_ELEMENTS

    report = PlacementReport()
    folded = place(constant_of_shape_model([4, MAX_CONSTANT_ELEMENTS // 4]), report=report)
    assert report.nodes[0].where == "folded" and not folded.graph.node
    y = numpy_helper.to_array(next(t for t in folded.graph.initializer if t.name == "y"))
    assert y.shape == (4, MAX_CONSTANT_ELEMENTS // 4) and np.all(y == np.float32(1.5))
    report = PlacementReport()
    big = constant_of_shape_model([16384, 16384])  # 256 Mi elements: 1 GiB if folded
    kept = place(big, report=report)
    assert [n.op_type for n in kept.graph.node] == ["ConstantOfShapeFloat"]  # placed: filled on the device
    assert report.nodes[0].where == "placed" and report.nodes[0].cann_ops == ("Fill",), report.nodes[0]
    assert kept.ByteSize() < 1000
    assert f"not folded: 268435456 elements > {MAX_CONSTANT_ELEMENTS}" in report.nodes[0].reason, report.nodes[0]
    assert unplace(kept) == big


def test_constant_of_shape_with_a_negative_dimension_is_refused_by_name():
    with pytest.raises(ValueError, match=r"ConstantOfShape node 'cos': its shape input 'shape' is \[2, -1\]; "
                                         r"ONNX requires every dimension to be >= 0"):
        place(constant_of_shape_model([2, -1]))


# --- Linear in nodes + edges (issue 19, item 13) ----------------------------------------------


@pytest.mark.parametrize("shape", ["fan_out", "chain"])
def test_placement_work_is_linear(shape):
    """The pass's Python work (trace events: lines and calls, deterministic) at 4n nodes is at most
    4.6 times that at n: linear (with a fixed part: 3.8 measured). Before the fix each fold of a
    fan-out rebuilt the list of the tensor's readers: 6.8 at these sizes."""
    import sys

    import benchmarks.bench_placement as bench

    def events(n):
        count = 0

        def tracer(frame, event, arg):
            nonlocal count
            count += 1
            return tracer

        model = getattr(bench, shape)(n)
        sys.settrace(tracer)
        try:
            place(model)
        finally:
            sys.settrace(None)
        return count

    place(bench.chain(10))  # the kernel table and schemas, once
    small, large = events(500), events(2000)
    assert large <= 4.6 * small, (small, large, large / small)


def test_arithmetic_of_unknown_type_that_the_ep_may_take_is_an_error():
    """A Sub whose input types shape inference cannot tell (here: read from a node ONNX has no
    schema for) is not placed, but ORT knows its type and may give it to the EP's kernel: an error."""
    nodes = [helper.make_node("FusedGemm", ["x", "w"], ["g"], name="fused", domain="com.microsoft"),
             helper.make_node("Sub", ["g", "b"], ["y"], name="sub")]
    model = model_of(nodes, [vi("x", TP.FLOAT, [4, 2]), vi("w", TP.FLOAT, [2, 1]), vi("b", TP.FLOAT, [1, 3])],
                     [vi("y", TP.FLOAT, None)], extra_opsets=[helper.make_opsetid("com.microsoft", 1)])
    report = PlacementReport()
    place(model, report=report)
    (n,) = report.errors
    assert n.node == "sub" and "Sub(?)" in n.error and "input types unknown" in n.error, n


@pytest.mark.parametrize("shape, error", [([1, 2, 4, 4], False), ([1, 2, 4], True)])
def test_a_node_whose_ep_kernel_has_a_known_defect_is_an_error(shape, error):
    """GlobalAveragePool has no placed kernel; on non-4-D input the EP's own kernel sends NCHW
    attributes AvgPoolV2 rejects (rewrite.placement.ep_defects): the report says so and check()
    refuses the session; on 4-D input the EP's kernel is fine."""
    from ort_ops.rewrite.placement import PlacementError

    node = helper.make_node("GlobalAveragePool", ["x"], ["y"], "pool")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TP.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION)
    report = PlacementReport()
    place(model, report=report)
    (n,) = report.nodes
    assert n.where == "cann_ep" and bool(n.error) == error, n
    if error:
        assert "GlobalAveragePool(float32)" in n.error, n.error
        with pytest.raises(PlacementError, match="GlobalAveragePool node 'pool'"):
            report.check()
    else:
        report.check()


@pytest.mark.skipif(not has_cann_kernels(), reason="the library was built without its CANN kernels")
def test_average_pool_with_pads_is_placed_not_left_to_the_defective_ep_kernel():
    """The EP's AveragePool inverts count_include_pad (ep_defects); the placed kernel sets
    AvgPoolV2's exclusive itself."""
    node = helper.make_node("AveragePool", ["x"], ["y"], "pool", kernel_shape=[2, 2], pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TP.FLOAT, [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("y", TP.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=IR_VERSION)
    report = PlacementReport()
    place(model, report=report)
    (n,) = report.nodes
    assert n.where == "placed" and not n.error, n
    report.check()


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("shape, attrs, reason", [
    ([1, 2, 9], {"kernel_shape": [3]}, None),
    ([1, 2, 6, 6], {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER"}, None),
    ([1, 2, 6, 6], {"kernel_shape": [3, 3], "auto_pad": "VALID"}, None),
    ([1, 2, 6, 6], {"kernel_shape": [3, 3], "auto_pad": "SAME_LOWER", "ceil_mode": 1}, "ignore ceil_mode"),
    ([1, 2, 6, 6], {"kernel_shape": [3, 3], "auto_pad": "SAME"}, "not an ONNX auto_pad"),
    ([1, 2, 6, 6], {"kernel_shape": [2, 2], "dilations": [2, 2]}, None),
    ([1, 2, 6, 300], {"kernel_shape": [2, 2], "dilations": [1, 256]},
     {"AveragePool": "beyond CANN Conv3DV2's limits"}),
    ([1, 2, 4, 4, 4], {"kernel_shape": [2, 2, 2]}, None),
    ([1, 2, 4, 4, 4], {"kernel_shape": [2, 2, 2], "dilations": [1, 2, 1], "auto_pad": "SAME_UPPER"},
     "not defined for dilated kernels"),
    ([1, 2, 4, 4, 4, 4], {"kernel_shape": [2, 2, 2, 2]}, "4-D"),
])
def test_pooling_placement_reasons(op, shape, attrs, reason):
    """1-D pools and auto_pad SAME_* / VALID are placed, 3-D ones too (MaxPool3D, AvgPool3D), and a
    dilated MaxPool (MaxPool3D) or AveragePool (Conv3DV2 + RealDiv, within Conv3DV2's limits);
    what CANN's pooling cannot run stays on the CPU with the reason (a dict: per op, placed if absent)."""
    if isinstance(reason, dict):
        reason = reason.get(op)
    node = helper.make_node(op, ["x"], ["y"], "pool", **attrs)
    model = model_of([node], [vi("x", TP.FLOAT, shape)], [vi("y", TP.FLOAT, None)])
    report = PlacementReport()
    place(model, report=report)
    (n,) = report.nodes
    if reason is None:
        assert n.where == "placed" and not n.error, n
    else:
        assert n.where == "cpu" and reason in n.reason, n


@pytest.mark.parametrize("attrs, where, route", [
    ({"kernel_shape": [2, 2]}, "placed", ("Cast", "MaxPoolV3")),
    ({"kernel_shape": [2, 2], "dilations": [2, 1]}, "cpu", None),
])
def test_integer_max_pool_runs_as_float16(attrs, where, route):
    """uint8 MaxPool: CANN Cast to float16 (exact), MaxPoolV3, Cast back; dilated: not placed."""
    node = helper.make_node("MaxPool", ["x"], ["y"], "pool", **attrs)
    model = model_of([node], [vi("x", TP.UINT8, [1, 2, 6, 6])], [vi("y", TP.UINT8, None)])
    report = PlacementReport()
    place(model, soc="Ascend910B1", report=report)
    (n,) = report.nodes
    assert n.where == where, n
    if route is not None:
        assert n.cann_ops == route, n
    else:
        assert "uint8 / int8" in n.reason, n
