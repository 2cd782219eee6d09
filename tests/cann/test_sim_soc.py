"""The simulator's SoC support matrix (``cann_ep/sim/src/soc.cc``): ``ACLSIM_SOC_NAME`` (read at
aclInit) picks CANN's SoC family, and an op type whose README product table marks that family
as unsupported fails ``aclopCompileAndExecute`` with ACL_ERROR_OP_NOT_FOUND naming the SoC and
the README line. ACL state is per process, so every SoC runs in its own child.

The expectation below is written from the READMEs themselves (hicann/ops-nn@e5c3fa93,
hicann/ops-math@c4193324: row 10 = Atlas 200I/500 A2 = ascend310b, row 11 = Atlas inference =
ascend310p, row 12 = Atlas training = ascend910, rows 8/9 = A3/A2; aclnn docs: lines 8..23).
"""

import pytest

from acl_ctypes import ACL_ERROR_OP_NOT_FOUND, run_child

pytestmark = pytest.mark.usefixtures("sim_dir")

# SoC name -> CANN family (hicann/ops-nn scripts/util/opdesc_parser.py SOC_TO_SHORT_SOC_MAP).
FAMILIES = {
    "Ascend910B1": "ascend910b", "Ascend910B4": "ascend910b", "Ascend910B": "ascend910", "Ascend910A": "ascend910",
    "Ascend910PremiumA": "ascend910", "Ascend910_9391": "ascend910_93", "Ascend310P3": "ascend310p",
    "Ascend310B1": "ascend310b", "Ascend950PR": "ascend950", "Ascend999X": "unknown",
}

# Op type -> families whose README row says x / 不支持.
B, P, T = "ascend310b", "ascend310p", "ascend910"
ONLY_950 = {"ascend910_93", "ascend910b", B, P, T}
MISSING = {
    # hicann/ops-nn
    "EluGrad": {B}, "EluGradV2": {B}, "SoftmaxGrad": {B}, "Relu": {B}, "ReluGrad": {B}, "Sigmoid": {B}, "LogSoftmaxV2": {B},
    "LogSoftmaxGrad": {B}, "SoftmaxCrossEntropyWithLogits": {B}, "CrossEntropyLoss": {B, P, T}, "CrossEntropyLossGrad": {B, P, T},
    "SparseSoftmaxCrossEntropyWithLogits": ONLY_950,
    "GatherElements": ONLY_950, "ScatterElements": ONLY_950, "GatherElementsV2": {"ascend950", B, P, T},
    "ScatterNonAliasingAdd": {B, P, T}, "ScatterNdUpdate": {B, P, T}, "ScatterElementsV2": {B, P, T}, "Conv2DBackpropInput": {B}, "Conv2DBackpropFilter": {B},
    "MaxPoolV3": {B}, "MaxPool3D": {B}, "Conv3DV2": {B, P, T}, "Conv3DBackpropInputV2": {B, P, T}, "Tile": {B}, "MaxPool3DWithArgmaxV2": {B, P, T}, "AvgPool3D": {B, P, T}, "MaxPoolWithArgmaxV1": {"ascend950", B}, "MaxPoolGradWithArgmaxV1": {"ascend950", B, P},
    "ApplyMomentum": {B}, "ApplyAdam": {B}, "ApplyAdamD": {B}, "ApplyAdamW": {B}, "ApplyAdamWV2": {B, P, T},
    "MatMulV3": {B, T}, "BatchMatMulV3": {B}, "LayerNormV4": {B, T}, "LayerNormGradV3": {B, P, T}, "BatchNormGradV3": {B, P, T},
    "BatchNormV3": {B, P, T},
    "GeluV2": {B},  # activation/gelu_v2/docs/aclnnGeluV2.md:17 (no README table)
    # hicann/ops-math
    "Add": {B}, "Mul": {B}, "Div": {P}, "Maximum": {B}, "Minimum": {B}, "Muls": {B}, "Adds": {B, P}, "Axpy": {B},
    "Abs": {B}, "Exp": {B, P, T}, "Log": {B, P, T}, "Sqrt": {B, P}, "Reciprocal": {B}, "Floor": {B}, "Ceil": {B},
    "Round": {B, P}, "Erf": {B, P}, "Tanh": {B, P}, "ReduceSum": {B}, "Select": {B}, "Equal": {B}, "NotEqual": {B},
    "Less": {P}, "LessEqual": {B}, "Greater": {B}, "GreaterEqual": {B}, "LogicalNot": {B}, "LogicalAnd": {B},
    "LogicalOr": {B}, "Slice": {B}, "Identity": {B}, "Expand": {B},
    "ReduceMax": {B}, "ReduceMin": {B}, "ReduceProd": {B}, "ClipByValueV2": {B},
    "IsNan": {B, P, T}, "ArgMaxV2": {B}, "ArgMin": {B},
}
# Op types every family has (README rows all √, or no README).
EVERYWHERE = ["Cumsum", "SoftmaxV2", "Pow", "PadV3", "ConcatV2", "SplitV", "Elu", "Sub", "RealDiv", "Neg", "Sin", "Cos", "Cast", "Fill", "Transpose", "TransposeD", "SelectV2", "StridedSlice", "ReduceAny", "ReduceAll",
              "MaxPoolGrad", "MatMulV2", "MatMul", "BatchMatMul", "Conv2D", "GEMM", "BroadcastToD",
              "NoSuchOpAnywhere"]

CHILD = """
acl.init()
ops = {ops!r}
result = {{"family": acl.lib.aclsimSocFamily().decode(), "soc": acl.lib.aclrtGetSocName().decode(),
           "available": {{op: acl.lib.aclsimOpAvailable(op.encode()) for op in ops}}, "runs": {{}}}}
x = np.array([1.0, -2.0], np.float32)
for op in ["Exp", "Add", "Less", "Sub"]:
    ins = [x] if op == "Exp" else [x, x]
    out = [(ACL_BOOL if op == "Less" else ACL_FLOAT, [2])]
    rc, msg, _ = acl.op(op, ins, out)
    result["runs"][op] = [rc, msg]
"""


@pytest.mark.parametrize("soc", list(FAMILIES))
def test_soc_family_and_op_availability(soc, tmp_path):
    trace = tmp_path / "trace.log"
    result, stderr = run_child(CHILD.format(ops=list(MISSING) + EVERYWHERE), ACLSIM_SOC_NAME=soc,
                               ACLSIM_TRACE=trace)
    family = FAMILIES[soc]
    assert result["soc"] == soc and result["family"] == family
    want = {op: int(family not in MISSING.get(op, set())) for op in list(MISSING) + EVERYWHERE}
    assert result["available"] == want
    for op, (rc, msg) in result["runs"].items():
        if want[op]:
            assert rc == 0 and msg is None, (op, msg)
        else:  # the ACL code, the SoC, the family and the README line that says so
            assert rc == ACL_ERROR_OP_NOT_FOUND, (op, rc)
            assert f"op type {op} is not available on SoC {soc} ({family}): hicann/ops-math@c4193324:math/" in msg
            assert "README.md:1" in msg and "as not supported" in msg
    init = [ln for ln in trace.read_text().splitlines() if "aclInit(" in ln]
    assert f"soc={soc} family={family}" in init[0]
    assert ("unknown SoC family: every op type available" in init[0]) == (family == "unknown")


def test_unavailable_op_message_cites_the_readme_row():
    """GatherElements is Ascend 950 only (its README's Atlas A2 row, line 9, is x): on the default
    SoC (Ascend910B1) it is refused, and the runtime keeps working."""
    result, stderr = run_child("""
        acl.init()
        x = np.zeros((2, 2), np.float32)
        i = np.zeros((2, 2), np.int32)
        rc, msg, _ = acl.op("GatherElements", [x, i], [(ACL_FLOAT, [2, 2])], {"dim": 0})
        ok = acl.op("Neg", [x], [(ACL_FLOAT, [2, 2])])
        result = {"rc": rc, "msg": msg, "ok": ok[0], "available": acl.lib.aclsimOpAvailable(b"GatherElements")}
    """)
    assert result["rc"] == ACL_ERROR_OP_NOT_FOUND and result["ok"] == 0 and result["available"] == 0
    assert result["msg"] == (
        "[aclsim] error 100024: op type GatherElements is not available on SoC Ascend910B1 (ascend910b): "
        'hicann/ops-nn@e5c3fa93:index/gather_elements/README.md:9 marks "Atlas A2 training/inference series" as not '
        "supported")
    assert "GatherElements is not available on SoC Ascend910B1" in stderr


def test_aclnn_doc_rows_are_cited_by_their_line():
    """Ops documented only by an aclnn page cite that page's product line (310B: line 17)."""
    result, _ = run_child("""
        acl.init()
        rc, msg, _ = acl.op("LogicalNot", [np.array([True, False])], [(ACL_BOOL, [2])])
        result = {"rc": rc, "msg": msg}
    """, ACLSIM_SOC_NAME="Ascend310B1")
    assert result["rc"] == ACL_ERROR_OP_NOT_FOUND
    assert "math/logical_not/docs/aclnnLogicalNot&aclnnInplaceLogicalNot.md:17" in result["msg"]


def test_family_helpers_exist_before_init():
    result, _ = run_child("""
        result = [acl.lib.aclsimSocFamily().decode(), acl.lib.aclsimOpAvailable(b"GatherElements"),
                  acl.lib.aclsimOpAvailable(None)]
    """)
    assert result == ["ascend910b", 0, 0]


def test_ops_still_run_on_their_family():
    result, _ = run_child("""
        acl.init()
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        i = np.array([[2, 0, 1]], np.int64)
        rc, msg, (y,) = acl.op("GatherElements", [x, i], [(ACL_FLOAT, [1, 3])], {"dim": 1})
        result = {"rc": rc, "y": y.tolist()}
    """, ACLSIM_SOC_NAME="Ascend950PR")
    assert result == {"rc": 0, "y": [[2.0, 0.0, 1.0]]}


def test_refused_op_enqueues_nothing():
    result, _ = run_child("""
        acl.init()
        before = acl.stat("ops_launched")
        rc, _, _ = acl.op("Exp", [np.zeros(2, np.float32)], [(ACL_FLOAT, [2])])
        result = [rc, acl.stat("ops_launched") - before]
    """, ACLSIM_SOC_NAME="Ascend310P3")
    assert result == [ACL_ERROR_OP_NOT_FOUND, 0]
