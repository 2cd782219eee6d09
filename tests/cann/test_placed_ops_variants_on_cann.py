"""Every placed-op case of test_placed_ops_on_cann.py again, in the forms users' graphs have them
(issue 19, "Tests"): with symbolic instead of static input shapes, inside an If branch and inside a
Loop body (placement places control-flow bodies too), with empty tensors, and with NaN, +-inf,
-0.0 and integer extremes in the data. Each form runs placed on the CANN EP (the ACL simulator)
and on the CPU EP; results agree as in the original case (values bit for bit, NaN for NaN, the
sign of zeros; or within ort_ops.tolerances)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper

from ort_ops import tolerances
from ort_ops.domain import IR_VERSION

cann_ep = pytest.importorskip("ort_ops.cann_ep")
placed_cases = pytest.importorskip("test_placed_ops_on_cann")

PROVIDER = "CANNExecutionProvider"
CASES = [c for c in placed_cases.CASES if placed_cases.on_910b(c)]
SPECIAL_F = ("nan", "inf", "-inf", "-0", "0", "subnormal", "-max", "max")
SPECIAL_I = {np.dtype(np.int64): np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min + 1, 0, -1]),
             np.dtype(np.int32): np.array([np.iinfo(np.int32).max, np.iinfo(np.int32).min + 1, 0, -1])}
# Special values only where ONNX defines the result and both EPs must agree: not where a float
# becomes an integer (Cast: NaN/inf undefined), not MaxPool (its NaN rule differs per EP, stated in
# docs/placement.md), not integer ops whose extremes overflow (Neg, Mul, Add, Sub wrap or are UB;
# integer Pow wraps on CANN where the CPU EP casts an out-of-range double), not ops whose integer
# inputs are indices or shapes, not ReduceMax/ReduceMin (a NaN gives NaN on the device; the CPU EP's
# answer depends on where it is: docs/placement.md), not BatchNormalization's training mode (its statistics).
# Nor InstanceNormalization, whose specials put inf in scale and B: inf·z + inf is inf (z > 0) or NaN by the
# order of evaluation (the CPU EP's gives NaN everywhere; LayerNormV4 then Mul and Add gives inf where z > 0).
NO_SPECIALS = {"instance_norm", "instance_norm_3d_eps", "instance_norm_5d_f16",
               "cast_float_int32", "max_pool", "max_pool_pads", "max_pool_ceil", "neg_int64",
               "mul_int64_bcast", "reduce_sum_int64", "constant_of_shape_fill", "expand_int64_computed_shape",
               "reduce_max_axis", "reduce_max_opset13_attr", "reduce_max_all_int64", "reduce_min_f16",
               "reduce_min_two_axes", "gather_embedding_token_ids", "gather_any_indices_last_axis_int32",
               "gather_any_indices_1d", "scatter_nd_add_embedding_backward", "scatter_nd_add_repeated",
               "scatter_nd_add_full_index_int32", "gather_nd_full_tuples_f16", "gather_elements",
               "gather_elements_f16_int32_indices", "scatter_elements", "scatter_elements_add",
               "scatter_elements_int32_mul", "slice_steps_fed", "slice_steps_fed_unit",
               "max_pool_1d", "max_pool_1d_ceil", "max_pool_same_upper", "max_pool_same_lower", "max_pool_1d_valid",
               "scatter_nd_none_rows", "scatter_nd_none_elements_f16", "scatter_nd_none_bool_batch",
               "scatter_nd_none_int64", "max_pool_3d", "max_pool_3d_pads_ceil_f16", "max_pool_3d_dilated",
               "max_pool_2d_dilated", "max_pool_1d_dilated_valid", "max_pool_unnamed_indices", "gather_nd_batch_dims_1",
               "gather_nd_batch_dims_2_tuples_int32", "pow_int32", "pow_int64_int32_exponent",
               "max_pool_indices", "max_pool_indices_column_major", "max_pool_indices_ceil_f16",
               "max_pool_indices_1d", "max_pool_indices_3d", "tile_computed_repeats_bool",
               # batch statistics: sums over +-max overflow or not depending on the order of summation
               *(f"batch_norm_train_{r}d" for r in range(2, 6)), "batch_norm_train_f16",
               "batch_norm_train_f16_scale_opset14",
               "cumsum_host_axis"}  # its axis input, an index
# Empty tensors: the elementwise and data-movement cases whose first input dimension can be 0
# without changing what the op means (the other ops' empty forms are tested in
# test_placed_ops_edge_cases_on_cann.py).
EMPTY_OPS = {"Elu", "Exp", "Log", "Neg", "Abs", "Sqrt", "Reciprocal", "Sigmoid", "Relu", "Tanh", "Not", "Add",
             "Sub", "Mul", "Div", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or",
             "Where", "Cast", "Identity", "Transpose"}


pytestmark = pytest.mark.usefixtures("cann_simulator")


def _symbolic(model):
    for i, vi in enumerate(model.graph.input):
        for k, d in enumerate(vi.type.tensor_type.shape.dim):
            d.ClearField("dim_value")
            d.dim_param = f"d{i}_{k}"
    return model


def _in_control_flow(model, kind: str):
    """The case's one node moved into an If's branches (both the same) or a one-trip Loop's body;
    the body reads the graph's inputs from the enclosing scope."""
    g = model.graph
    node = g.node[0]
    out = node.output[0]
    if kind == "if":
        branch = lambda name: helper.make_graph([node], name, [], [helper.make_empty_tensor_value_info(out)])
        cf = helper.make_node("If", ["cond"], ["result"], "control", then_branch=branch("then"),
                              else_branch=branch("else"))
        extra = [helper.make_tensor_value_info("cond", TP.BOOL, [])]
    else:
        body = helper.make_graph(
            [node, helper.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
            [helper.make_tensor_value_info("iter", TP.INT64, []),
             helper.make_tensor_value_info("cond_in", TP.BOOL, [])],
            [helper.make_tensor_value_info("cond_out", TP.BOOL, []), helper.make_empty_tensor_value_info(out)])
        cf = helper.make_node("Loop", ["trips", "cond"], ["result"], "control", body=body)
        extra = [helper.make_tensor_value_info("trips", TP.INT64, []),
                 helper.make_tensor_value_info("cond", TP.BOOL, [])]
    graph = helper.make_graph([cf], g.name, [*g.input, *extra], [helper.make_empty_tensor_value_info("result")],
                              list(g.initializer))
    m = helper.make_model(graph, opset_imports=list(model.opset_import))
    m.ir_version = IR_VERSION
    return m


def _with_specials(value: np.ndarray, seed: int, huge: bool = True) -> np.ndarray:
    """``value`` with NaN, +-inf, -0.0, 0, the smallest subnormal and (``huge``) +-max at seeded
    places (integers: their extremes). Sums and products (not exact cases) get no +-max: whether
    they overflow depends on the summation order, which the EPs need not share."""
    a = np.array(value, copy=True)
    if a.size == 0:
        return a
    rng = np.random.default_rng(seed)
    flat = a.reshape(-1)
    if a.dtype.kind == "f":
        info = np.finfo(a.dtype)
        named = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "-0": -0.0, "0": 0.0,
                 "subnormal": info.smallest_subnormal, "-max": -info.max, "max": info.max}
        pool = np.array([named[k] for k in SPECIAL_F if huge or not k.endswith("max")], a.dtype)
    elif a.dtype in SPECIAL_I:
        pool = SPECIAL_I[a.dtype]
    else:
        return a
    at = rng.choice(flat.size, size=min(flat.size, len(pool)), replace=False)
    flat[at] = pool[: len(at)]
    return a


def _empty(value: np.ndarray, rank: int) -> np.ndarray:
    """Dimension 0 of the inputs of the largest rank ``rank`` made 0; inputs of a lower rank and
    broadcast dimensions of 1 stay as they are (1 broadcasts with 0)."""
    a = np.asarray(value)
    if a.ndim < rank or a.ndim == 0 or a.shape[0] == 1:
        return a
    return np.zeros((0, *a.shape[1:]), a.dtype)


def _compare(got, want, exact: bool):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    if got.dtype.kind == "f":
        nan = np.isnan(want)
        np.testing.assert_array_equal(np.isnan(got), nan)
        g, w = got[~nan], want[~nan]
        np.testing.assert_array_equal(np.signbit(g[w == 0]), np.signbit(w[w == 0]))
        if exact:
            np.testing.assert_array_equal(g, w)
        else:
            closeness = tolerances.check(g, w)
            assert closeness.ok, closeness.message
    else:
        np.testing.assert_array_equal(got, want)


def _run(case, model, feeds, tmp_path, expect_shape_of=None):
    cpu = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = cpu.run(None, feeds)
    session = cann_ep.session(model, profile_prefix=str(tmp_path / "p"))
    assert not session.placement.errors, session.placement.summary()
    body = [n for n in session.placement.nodes if n.op_type == case.op]
    assert body and all(n.where in ("placed", "cann_ep") for n in body), session.placement.summary()
    got = session.run(None, feeds)
    for g, w in zip(got, want):
        _compare(g, w, case.exact)


FORMS = ["symbolic", "if", "loop", "specials", "empty"]


def _params():
    out = []
    for c in CASES:
        for form in FORMS:
            if form == "specials" and c.id in NO_SPECIALS:
                continue
            if form == "empty" and c.op not in EMPTY_OPS:
                continue
            out.append(pytest.param(c, form, id=f"{c.id}-{form}"))
    return out


@pytest.mark.parametrize("case, form", _params())
def test_placed_op_form_matches_the_cpu_ep(case, form, tmp_path):
    model, feeds = case.model(), case.feeds()
    if form == "symbolic":
        model = _symbolic(model)
    elif form in ("if", "loop"):
        model = _in_control_flow(model, form)
        feeds = {**feeds, "cond": np.array(True)}
        if form == "loop":
            feeds["trips"] = np.array(1, np.int64)
    elif form == "specials":
        feeds = {k: _with_specials(v, i, huge=case.exact) for i, (k, v) in enumerate(sorted(feeds.items()))}
    elif form == "empty":
        rank = max(np.ndim(v) for v in feeds.values())
        feeds = {k: _empty(v, rank) for k, v in feeds.items()}
        for vi in model.graph.input:
            shape = feeds[vi.name].shape
            for d, n in zip(vi.type.tensor_type.shape.dim, shape):
                d.dim_value = n
    _run(case, model, feeds, tmp_path)


def test_the_forms_cover_every_case():
    ids = {p.id for p in _params()}
    for c in CASES:
        assert {f"{c.id}-symbolic", f"{c.id}-if", f"{c.id}-loop"} <= ids, c.id
    assert sum(i.endswith("-specials") for i in ids) >= len(CASES) - len(NO_SPECIALS)
    assert sum(i.endswith("-empty") for i in ids) >= 20


def test_specials_are_in_the_data():
    a = _with_specials(np.ones((4, 8), np.float32), 0)
    assert np.isnan(a).sum() == 1 and np.isinf(a).sum() == 2 and (np.signbit(a) & (a == 0)).sum() == 1
