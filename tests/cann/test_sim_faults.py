"""Run-time (device) faults: a value a kernel only sees when it runs (an index out of range) is
not undefined behaviour and not silently wrong. The op is enqueued (aclopCompileAndExecute
returns 0), the stream worker records the fault and skips the op's write, and the next
synchronisation of that stream (aclrtSynchronizeStream / aclrtSynchronizeDevice / an event
recorded after it) returns ACL_ERROR_RT_AICORE_EXCEPTION (507015) with aclGetRecentErrMsg naming
the op and the bad value, once; the stream then works again.

GatherElements / ScatterElements exist only on Ascend 950 in the SoC matrix, so these children
run with ACLSIM_SOC_NAME=Ascend950PR.
"""

import json
import subprocess
import sys

import pytest

from acl_ctypes import ACL_ERROR_RT_AICORE_EXCEPTION, run_child, sim_env

pytestmark = pytest.mark.usefixtures("sim_dir")
SOC = {"ACLSIM_SOC_NAME": "Ascend950PR"}

# Runs GatherElements with `index` into a y buffer pre-filled with a sentinel; reports the enqueue
# and sync codes, the message, the y buffer after the sync, and a second, good op.
GATHER = """
acl.init()
s = acl.stream()
x = np.arange(12, dtype=np.float32).reshape(3, 4)
index = np.array({index!r}, np.{itype})
px, pi = acl.to_device(x), acl.to_device(index)
sentinel = np.full(index.shape, -7.0, np.float32)
py = acl.to_device(sentinel)
def desc(a):
    d = (ctypes.c_int64 * a.ndim)(*a.shape)
    return acl.lib.aclCreateTensorDesc(acl_dtype(a.dtype), a.ndim, d, ACL_FORMAT_ND)
vp = ctypes.c_void_p
ins = (vp * 2)(desc(x), desc(index))
bufs = (vp * 2)(acl.lib.aclCreateDataBuffer(px, x.nbytes), acl.lib.aclCreateDataBuffer(pi, index.nbytes))
outs = (vp * 1)(desc(sentinel))
obufs = (vp * 1)(acl.lib.aclCreateDataBuffer(py, sentinel.nbytes))
attr = acl.lib.aclopCreateAttr()
acl.lib.aclopSetAttrInt(attr, b"dim", {dim})
enqueue = acl.op_lib.aclopCompileAndExecute(b"GatherElements", 2, ins, bufs, 1, outs, obufs, attr, 0, 0, None, s)
enqueue_msg = acl.err()
sync = {sync}
msg = acl.err()
again = acl.lib.aclrtSynchronizeStream(s)
y_after = acl.from_device(py, index.shape, np.float32).tolist()
ok = acl.op("GatherElements", [x, np.zeros(index.shape, np.int32)], [(ACL_FLOAT, list(index.shape))], {{"dim": 0}},
            stream=s)
result = {{"enqueue": enqueue, "enqueue_msg": enqueue_msg, "sync": sync, "msg": msg, "again": again,
           "again_msg": acl.err(), "y": y_after, "ok": [ok[0], ok[2][0].tolist() if ok[2][0] is not None else None],
           "faults": acl.stat("device_faults")}}
"""


@pytest.mark.parametrize("sync", ["stream", "device", "event"])
def test_bad_gather_index_faults_at_the_next_sync_once(sync):
    call = {"stream": "acl.lib.aclrtSynchronizeStream(s)", "device": "acl.lib.aclrtSynchronizeDevice()",
            "event": "(lambda e: (acl.lib.aclrtCreateEvent(ctypes.byref(e)), acl.lib.aclrtRecordEvent(e, s), "
                     "acl.lib.aclrtSynchronizeEvent(e))[2])(ctypes.c_void_p())"}[sync]
    result, stderr = run_child(GATHER.format(index=[[0, 1, 2, 5], [1, 1, 1, 1]], itype="int32", dim=1, sync=call),
                               **SOC)
    assert result["enqueue"] == 0 and result["enqueue_msg"] is None  # only the device sees index values
    assert result["sync"] == ACL_ERROR_RT_AICORE_EXCEPTION
    assert "AI Core exception in GatherElements: input 1 (index) holds 5 at [0,3], outside [0, 4) (dim 1 of x [3,4])" \
        in result["msg"]
    assert result["msg"].startswith("[aclsim] error 507015: stream ")
    assert result["again"] == 0 and result["again_msg"] is None  # reported once
    assert result["y"] == [[-7.0] * 4] * 2  # the faulting op wrote nothing
    assert result["ok"] == [0, [[0.0, 1.0, 2.0, 3.0]] * 2]  # the stream works again
    assert result["faults"] == 1
    assert "GatherElements: input 1 (index) holds 5" in stderr


def test_negative_gather_index_is_a_fault_not_a_wrap():
    """CANN reads index values as unsigned (torch.gather semantics): -1 is out of range."""
    result, _ = run_child(GATHER.format(index=[[-1, 0, 0, 0]], itype="int64", dim=0,
                                        sync="acl.lib.aclrtSynchronizeStream(s)"), **SOC)
    assert result["sync"] == ACL_ERROR_RT_AICORE_EXCEPTION
    assert "input 1 (index) holds -1 at [0,0], outside [0, 3) (dim 0 of x [3,4])" in result["msg"]
    assert result["y"] == [[-7.0] * 4]


def test_event_recorded_before_the_fault_does_not_report_it():
    result, _ = run_child("""
        acl.init()
        s = acl.stream()
        ev = ctypes.c_void_p()
        acl.lib.aclrtCreateEvent(ctypes.byref(ev))
        acl.lib.aclrtRecordEvent(ev, s)
        x = np.ones((2, 2), np.float32)
        bad = np.array([[0, 9], [0, 0]], np.int32)
        rc, _, _ = acl.op("GatherElements", [x, bad], [(ACL_FLOAT, [2, 2])], {"dim": 1}, stream=s, sync=False)
        before = acl.lib.aclrtSynchronizeEvent(ev)   # recorded before the faulting op
        after = acl.lib.aclrtSynchronizeStream(s)
        result = {"rc": rc, "before": before, "after": after, "msg": acl.err()}
    """, **SOC)
    assert result["rc"] == 0 and result["before"] == 0
    assert result["after"] == ACL_ERROR_RT_AICORE_EXCEPTION and "holds 9 at [0,1]" in result["msg"]


def test_scatter_and_reduce_faults():
    result, _ = run_child("""
        acl.init()
        data = np.zeros((2, 3), np.float32)
        upd = np.ones((1, 2), np.float32)
        out = {}
        out["scatter"] = acl.op("ScatterElements", [data, np.array([[0, 3]], np.int32), upd], [(ACL_FLOAT, [2, 3])],
                                {"axis": 1, "reduction": "add"})[:2]
        # ReduceSum with its axes in device memory: only checked when it runs
        out["reduce"] = acl.op("ReduceSum", [data, np.array([2], np.int64)], [(ACL_FLOAT, [2])])[:2]
        out["reduce_shape"] = acl.op("ReduceSum", [data, np.array([0], np.int32)], [(ACL_FLOAT, [2])])[:2]
        rc, msg, (y,) = acl.op("ReduceSum", [data + 1, np.array([-1], np.int32)], [(ACL_FLOAT, [2])])
        out["reduce_ok"] = [rc, y.tolist()]
        result = out
    """, **SOC)
    rc, msg = result["scatter"]
    assert rc == ACL_ERROR_RT_AICORE_EXCEPTION
    assert "AI Core exception in ScatterElements: input 1 (indices) holds 3 at [0,1], outside [0, 3) (dim 1 of data " \
        "[2,3])" in msg
    rc, msg = result["reduce"]
    assert rc == ACL_ERROR_RT_AICORE_EXCEPTION
    assert "AI Core exception in ReduceSum: input 1 (axes) [2]: axis 2 is out of range [-2, 1] for x [2,3]" in msg
    rc, msg = result["reduce_shape"]
    assert rc == ACL_ERROR_RT_AICORE_EXCEPTION
    assert "input 1 (axes) [0]: gives y shape [3], but output 0 (y) is [2]" in msg
    assert result["reduce_ok"] == [0, [3.0, 3.0]]


def test_injected_device_fault():
    """aclsimFaultNextOp / ACLSIM_FAULT_NEXT_OP make any op fault when it runs (for callers' error
    paths: the ORT CANN EP only sees it at its end-of-run aclrtSynchronizeStream)."""
    result, _ = run_child("""
        acl.init()
        x = np.ones(2, np.float32)
        acl.lib.aclsimFaultNextOp(b"Neg")
        first = acl.op("Neg", [x], [(ACL_FLOAT, [2])])
        second = acl.op("Neg", [x], [(ACL_FLOAT, [2])])
        result = {"first": first[:2], "second": [second[0], second[2][0].tolist()]}
    """)
    assert result["first"][0] == ACL_ERROR_RT_AICORE_EXCEPTION
    assert "AI Core exception in Neg: injected device fault (aclsimFaultNextOp)" in result["first"][1]
    assert result["second"] == [0, [-1.0, -1.0]]


EP_CHILD = r"""
import json, os
import numpy as np
import ort_ops.cann_ep.sim as sim
sim.load()
import onnxruntime as ort
from onnx import TensorProto as T, helper
vi = helper.make_tensor_value_info
g = helper.make_graph([helper.make_node("Mul", ["a", "b"], ["y"])], "g",
                      [vi("a", T.FLOAT, [2, 3]), vi("b", T.FLOAT, [2, 3])], [vi("y", T.FLOAT, [2, 3])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=9)
sess = ort.InferenceSession(m.SerializeToString(), providers=[
    ("CANNExecutionProvider", {"enable_cann_graph": "0"}), "CPUExecutionProvider"])
a = np.full((2, 3), 3.0, np.float32)
out = []
for arm in (True, False):
    if arm:
        os.environ["ACLSIM_FAULT_NEXT_OP"] = "Mul"
    try:
        out.append({"ok": sess.run(None, {"a": a, "b": a})[0].tolist()})
    except Exception as e:
        out.append({"error": str(e)})
print("@@RESULT@@" + json.dumps(out))
"""


def test_a_device_fault_fails_the_ort_session_run_and_the_next_run_works():
    """How ORT 1.24's CANN EP surfaces it: the provider's end-of-run aclrtSynchronizeStream fails,
    CannCall (onnxruntime/core/providers/cann/cann_call.cc) throws "CANN failure 507015 ...
    expr=aclrtSynchronizeStream(...)". It calls aclGetRecentErrMsg but drops the text, so the
    simulator's message naming the op is only on stderr."""
    ort = pytest.importorskip("onnxruntime")
    if "CANNExecutionProvider" not in ort.get_available_providers():
        pytest.skip("this onnxruntime has no CANNExecutionProvider (use .venv-cann)")
    proc = subprocess.run([sys.executable, "-c", EP_CHILD], capture_output=True, text=True, timeout=300,
                          env=sim_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first, second = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT@@")][-1][10:])
    assert "CANN failure 507015" in first["error"] and "aclrtSynchronizeStream" in first["error"]
    assert "AI Core exception in Mul: injected device fault (ACLSIM_FAULT_NEXT_OP=Mul)" in proc.stderr
    assert second == {"ok": [[9.0] * 3] * 2}
