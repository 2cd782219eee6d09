"""ACLSIM_TRACE logs every ACL call, one line each."""

import pytest

from acl_ctypes import run_child

pytestmark = pytest.mark.usefixtures("sim_dir")

BODY = """
    acl.init()
    p = acl.malloc(64)
    rc, msg, _ = acl.op("Relu", [np.zeros(4, np.float32)], [(ACL_FLOAT, [4])], attrs={"flag": True, "perm": [1, 0]})
    acl.lib.aclrtFree(p)
    acl.lib.aclFinalize()
    result = {"rc": rc}
"""


def test_trace_to_file_has_one_line_per_call(tmp_path):
    trace = tmp_path / "trace.log"
    result, _ = run_child(BODY, ACLSIM_TRACE=str(trace))
    assert result["rc"] == 0
    lines = trace.read_text().splitlines()
    calls = [ln.split(" ", 2)[2] for ln in lines]
    assert all(ln.startswith("[aclsim] ") for ln in lines)
    assert calls[0].startswith("aclInit(configPath=NULL) = 0")
    assert calls[1] == "aclrtSetDevice(deviceId=0) = 0"
    assert any(c.startswith("aclrtMalloc(size=64, policy=0) = 0, *devPtr=0x") for c in calls)
    relu = [c for c in calls if c.startswith("aclopCompileAndExecute(opType=Relu")]
    assert len(relu) == 1
    assert "inputs=[ACL_FLOAT[4]@0x" in relu[0] and "attr={flag=true, perm=[1,0]}" in relu[0]
    assert relu[0].endswith(") = 0")
    assert calls[-1] == "aclFinalize() = 0"
    assert sum(c.startswith("aclrtFree(") for c in calls) == 3  # p, the input and the output


def test_trace_to_stderr_and_off_by_default():
    _, stderr_on = run_child(BODY, ACLSIM_TRACE="1")
    _, stderr_off = run_child(BODY)
    assert "aclopCompileAndExecute(opType=Relu" in stderr_on
    assert "[aclsim]" not in stderr_off
