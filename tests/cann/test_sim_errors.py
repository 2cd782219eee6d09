"""Simulator error reporting: unknown op types, injected failures, EluGrad's tiling checks,
graph-mode stubs, and aclGetRecentErrMsg returning NULL when nothing failed."""

import pytest

from acl_ctypes import (
    ACL_BF16,
    ACL_DOUBLE,
    ACL_ERROR_FEATURE_UNSUPPORTED,
    ACL_ERROR_INVALID_PARAM,
    ACL_ERROR_OP_INPUT_NOT_MATCH,
    ACL_ERROR_OP_NOT_FOUND,
    ACL_ERROR_OP_OUTPUT_NOT_MATCH,
    ACL_ERROR_REPEAT_INITIALIZE,
    ACL_ERROR_RT_AICORE_EXCEPTION,
    ACL_ERROR_UNSUPPORTED_DATA_TYPE,
    ACL_FLOAT,
    ACL_FLOAT16,
    run_child,
)

pytestmark = pytest.mark.usefixtures("sim_dir")


def test_unknown_op_type_returns_op_not_found():
    result, stderr = run_child("""
        acl.init()
        rc, msg, _ = acl.op("NoSuchOp", [np.zeros(3, np.float32)], [(ACL_FLOAT, [3])])
        result = {"rc": rc, "msg": msg, "again": acl.err()}
    """)
    assert result["rc"] == ACL_ERROR_OP_NOT_FOUND
    assert 'op type "NoSuchOp" is not implemented by the ACL simulator' in result["msg"]
    assert "EluGrad" in result["msg"]  # lists what is implemented
    assert result["again"] is None
    assert "NoSuchOp" in stderr


def test_recent_error_message_is_null_after_success():
    result, _ = run_child("""
        acl.init()
        rc, msg, (y,) = acl.op("Add", [np.ones(2, np.float32), np.ones(2, np.float32)], [(ACL_FLOAT, [2])])
        result = {"rc": rc, "msg": msg, "y": y.tolist()}
    """)
    assert result == {"rc": 0, "msg": None, "y": [2.0, 2.0]}


def test_env_failure_injection_fails_the_next_matching_op_once():
    result, stderr = run_child("""
        acl.init()
        x = np.array([-1.0, 1.0], np.float32)
        other = acl.op("Neg", [x], [(ACL_FLOAT, [2])])          # other op types are not affected
        first = acl.op("EluGrad", [x, x], [(ACL_FLOAT, [2])])   # fails
        second = acl.op("EluGrad", [x, x], [(ACL_FLOAT, [2])])  # works again
        result = {"other": [other[0], other[2][0].tolist()], "first": first[:2],
                  "second": [second[0], second[1], second[2][0].tolist()], "errors": acl.stat("errors")}
    """, ACLSIM_FAIL_NEXT_OP="EluGrad")
    assert result["other"] == [0, [1.0, -1.0]]
    assert result["first"][0] == ACL_ERROR_RT_AICORE_EXCEPTION
    assert "EluGrad: injected failure (ACLSIM_FAIL_NEXT_OP=EluGrad)" in result["first"][1]
    assert result["second"] == [0, None, [0.0, 1.0]]
    assert result["errors"] == 1
    assert "injected failure" in stderr


def test_env_failure_injection_with_error_code_and_wildcard():
    result, _ = run_child("""
        acl.init()
        rc, msg, _ = acl.op("Relu", [np.zeros(1, np.float32)], [(ACL_FLOAT, [1])])
        result = {"rc": rc, "msg": msg}
    """, ACLSIM_FAIL_NEXT_OP="*:500002")
    assert result["rc"] == 500002
    assert "Relu: injected failure (ACLSIM_FAIL_NEXT_OP=*:500002)" in result["msg"]


def test_api_failure_injection():
    result, _ = run_child("""
        acl.init()
        acl.lib.aclsimFailNextOp(b"Mul", 100000)
        x = np.ones(2, np.float32)
        a = acl.op("Mul", [x, x], [(ACL_FLOAT, [2])])
        b = acl.op("Mul", [x, x], [(ACL_FLOAT, [2])])
        result = {"a": a[:2], "b": [b[0], b[1]]}
    """)
    assert result["a"][0] == 100000 and "injected failure (aclsimFailNextOp)" in result["a"][1]
    assert result["b"] == [0, None]


ELUGRAD_ERRORS = [
    # (inputs as (dtype, dims), outputs, expected code, message fragment)
    ("dtype mismatch", [(ACL_FLOAT, [2, 3]), (ACL_FLOAT16, [2, 3])], [(ACL_FLOAT, [2, 3])],
     ACL_ERROR_OP_INPUT_NOT_MATCH, "input 1 (activations) has dtype ACL_FLOAT16, expected ACL_FLOAT"),
    ("output dtype mismatch", [(ACL_BF16, [4]), (ACL_BF16, [4])], [(ACL_FLOAT, [4])],
     ACL_ERROR_OP_OUTPUT_NOT_MATCH, "output 0 (y) has dtype ACL_FLOAT, expected ACL_BF16"),
    ("shape mismatch", [(ACL_FLOAT, [2, 3]), (ACL_FLOAT, [3, 2])], [(ACL_FLOAT, [2, 3])],
     ACL_ERROR_OP_INPUT_NOT_MATCH, "input 1 (activations) has shape [3,2], expected [2,3]"),
    ("output shape mismatch", [(ACL_FLOAT, [2, 3]), (ACL_FLOAT, [2, 3])], [(ACL_FLOAT, [6])],
     ACL_ERROR_OP_OUTPUT_NOT_MATCH, "output 0 (y) has shape [6], expected [2,3]"),
    ("empty tensor", [(ACL_FLOAT, [1, 0, 2, 64]), (ACL_FLOAT, [1, 0, 2, 64])], [(ACL_FLOAT, [1, 0, 2, 64])],
     ACL_ERROR_INVALID_PARAM, "input 0 (grads) is an empty tensor (shape [1,0,2,64])"),
    ("double", [(ACL_DOUBLE, [4]), (ACL_DOUBLE, [4])], [(ACL_DOUBLE, [4])],
     ACL_ERROR_UNSUPPORTED_DATA_TYPE, "input 0 (grads) has dtype ACL_DOUBLE, expected one of ACL_FLOAT, ACL_FLOAT16"),
    ("one input", [(ACL_FLOAT, [4])], [(ACL_FLOAT, [4])],
     ACL_ERROR_OP_INPUT_NOT_MATCH, "expected 2 inputs (grads, activations), got 1"),
    ("two outputs", [(ACL_FLOAT, [4]), (ACL_FLOAT, [4])], [(ACL_FLOAT, [4]), (ACL_FLOAT, [4])],
     ACL_ERROR_OP_OUTPUT_NOT_MATCH, "expected 1 output (y), got 2"),
]


@pytest.mark.parametrize("case,inputs,outputs,code,fragment", ELUGRAD_ERRORS, ids=[c[0] for c in ELUGRAD_ERRORS])
def test_elugrad_tiling_checks(case, inputs, outputs, code, fragment):
    result, _ = run_child(f"""
        acl.init()
        ins = []
        for dt, dims in {inputs!r}:
            a = np.zeros(dims, numpy_dtype(dt))
            ins.append((dt, dims, acl.to_device(a) if a.nbytes else 0, a.nbytes))
        rc, msg, _ = acl.op("EluGrad", ins, {outputs!r})
        ok = acl.op("EluGrad", [np.ones(2, np.float32), np.ones(2, np.float32)], [(ACL_FLOAT, [2])])
        result = {{"rc": rc, "msg": msg, "ok": ok[0], "ok_msg": ok[1]}}
    """)
    assert result["rc"] == code, result["msg"]
    assert "EluGrad: tiling failed: " + fragment in result["msg"]
    assert result["ok"] == 0 and result["ok_msg"] is None  # the runtime stays usable


def test_buffer_smaller_than_descriptor_is_rejected():
    result, _ = run_child("""
        acl.init()
        p = acl.malloc(8)
        rc, msg, _ = acl.op("Relu", [(ACL_FLOAT, [4], p, 8)], [(ACL_FLOAT, [4])])
        acl.lib.aclrtFree(p)
        result = {"rc": rc, "msg": msg}
    """)
    assert result["rc"] == ACL_ERROR_INVALID_PARAM
    assert "Relu: input 0: data buffer has 8 bytes, descriptor ACL_FLOAT [4] needs 16" in result["msg"]


def test_runtime_identity_and_repeat_init():
    result, _ = run_child("""
        n = ctypes.c_uint32()
        acl.init()
        acl.lib.aclrtGetDeviceCount(ctypes.byref(n))
        rc = acl.lib.aclInit(None)
        result = {"soc": acl.lib.aclrtGetSocName().decode(), "count": n.value, "repeat": rc, "msg": acl.err(),
                  "bad_device": acl.lib.aclrtSetDevice(2), "bad_msg": acl.err()}
    """, ACLSIM_DEVICE_COUNT=2)
    assert result["soc"] == "Ascend910B1"
    assert result["count"] == 2
    assert result["repeat"] == ACL_ERROR_REPEAT_INITIALIZE and "already initialized" in result["msg"]
    assert result["bad_device"] == 107001 and "device id 2 is out of range (device count 2)" in result["bad_msg"]


def test_model_api_reports_graph_mode_not_simulated():
    result, _ = run_child("""
        acl.init()
        mid = ctypes.c_uint32()
        rc = acl.lib.aclmdlLoadFromMem(b"x", 1, ctypes.byref(mid))
        result = {"rc": rc, "msg": acl.err()}
    """)
    assert result["rc"] == ACL_ERROR_FEATURE_UNSUPPORTED
    assert "aclmdlLoadFromMem: graph mode is not simulated" in result["msg"]
