"""Simulator device memory: alignment, padding, and detection of leaks, double frees,
unknown pointers and writes outside an allocation."""

import pytest

from acl_ctypes import (
    ACL_ERROR_INVALID_PARAM,
    ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED,
    ACL_ERROR_RT_MEMORY_FREE,
    run_child,
)

pytestmark = pytest.mark.usefixtures("sim_dir")


def test_clean_run_finalizes_without_error():
    result, stderr = run_child("""
        acl.init()
        p = acl.malloc(100)
        result = {"align": p % 32, "live": acl.stat("live_allocations"), "free": acl.lib.aclrtFree(p),
                  "live_after": acl.stat("live_allocations"), "fin": acl.lib.aclFinalize(), "msg": acl.err(),
                  "leaks": acl.stat("leaks_detected")}
    """)
    assert result == {"align": 0, "live": 1, "free": 0, "live_after": 0, "fin": 0, "msg": None, "leaks": 0}
    assert "[aclsim] error" not in stderr


def test_allocations_are_32_byte_aligned_and_zero_size_is_rejected():
    result, _ = run_child("""
        acl.init()
        ptrs = [acl.malloc(n) for n in (1, 7, 31, 32, 33, 1000, 4097)]
        p = ctypes.c_void_p()
        rc0 = acl.lib.aclrtMalloc(ctypes.byref(p), 0, 0)
        msg0 = acl.err()
        result = {"aligns": [x % 32 for x in ptrs], "rc0": rc0, "msg0": msg0,
                  "frees": [acl.lib.aclrtFree(x) for x in ptrs]}
    """)
    assert result["aligns"] == [0] * 7
    assert result["rc0"] == ACL_ERROR_INVALID_PARAM
    assert "size must be greater than 0" in result["msg0"]
    assert result["frees"] == [0] * 7


def test_leak_is_reported_at_finalize():
    result, stderr = run_child("""
        acl.init()
        p = acl.malloc(100)
        q = acl.malloc(64)
        acl.lib.aclrtFree(q)
        rc = acl.lib.aclFinalize()
        result = {"rc": rc, "msg": acl.err(), "leaks": acl.stat("leaks_detected"),
                  "live": acl.stat("live_allocations"), "p": hex(p)}
    """)
    assert result["rc"] == ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED
    assert "memory leak: 1 allocation(s), 100 bytes never freed" in result["msg"]
    assert result["p"] in result["msg"]
    assert result["leaks"] == 1 and result["live"] == 0
    assert "memory leak" in stderr


def test_double_free_is_caught():
    result, stderr = run_child("""
        acl.init()
        p = acl.malloc(256)
        first = acl.lib.aclrtFree(p)
        second = acl.lib.aclrtFree(p)
        result = {"first": first, "second": second, "msg": acl.err(), "after": acl.err(),
                  "double_frees": acl.stat("double_frees")}
    """)
    assert result["first"] == 0
    assert result["second"] == ACL_ERROR_RT_MEMORY_FREE
    assert "double free" in result["msg"]
    assert result["after"] is None  # the message is consumed by the first aclGetRecentErrMsg
    assert result["double_frees"] == 1
    assert "double free" in stderr


def test_freeing_unknown_pointers_is_caught():
    result, _ = run_child("""
        acl.init()
        host = ctypes.create_string_buffer(64)
        rc_host = acl.lib.aclrtFree(ctypes.addressof(host))
        msg_host = acl.err()
        p = acl.malloc(128)
        rc_inner = acl.lib.aclrtFree(p + 16)
        msg_inner = acl.err()
        rc_host_api = acl.lib.aclrtFreeHost(p)
        msg_host_api = acl.err()
        result = {"rc_host": rc_host, "msg_host": msg_host, "rc_inner": rc_inner, "msg_inner": msg_inner,
                  "rc_host_api": rc_host_api, "msg_host_api": msg_host_api, "ok": acl.lib.aclrtFree(p),
                  "invalid": acl.stat("invalid_frees")}
    """)
    assert result["rc_host"] == ACL_ERROR_RT_MEMORY_FREE
    assert "unknown pointer: not allocated by aclrtMalloc" in result["msg_host"]
    assert result["rc_inner"] == ACL_ERROR_RT_MEMORY_FREE
    assert "points 16 bytes into a 128-byte allocation" in result["msg_inner"]
    assert result["rc_host_api"] == ACL_ERROR_RT_MEMORY_FREE
    assert "wrong free function for device memory (use aclrtFree)" in result["msg_host_api"]
    assert result["ok"] == 0
    assert result["invalid"] == 3


@pytest.mark.parametrize("offset,expected", [
    (100, "write past the end: byte(s) 100..100 of a 100-byte device allocation"),
    (127, "write past the end: byte(s) 127..127 of a 100-byte device allocation"),  # inside ACL's padding
    (-1, "write before the start: byte -1 of a 100-byte device allocation"),
])
def test_writes_outside_the_allocation_are_caught_on_free(offset, expected):
    result, _ = run_child(f"""
        acl.init()
        p = acl.malloc(100)
        ctypes.memset(p + {offset}, 0x11, 1)
        rc = acl.lib.aclrtFree(p)
        result = {{"rc": rc, "msg": acl.err(), "overruns": acl.stat("overruns"), "live": acl.stat("live_allocations")}}
    """)
    assert result["rc"] == ACL_ERROR_RT_MEMORY_FREE
    assert expected in result["msg"]
    assert result["overruns"] == 1 and result["live"] == 0


def test_copy_past_the_end_of_an_allocation_is_rejected():
    result, _ = run_child("""
        acl.init()
        p = acl.malloc(16)
        src = np.arange(8, dtype=np.float32)
        rc = acl.lib.aclrtMemcpy(p, 32, src.ctypes.data, 32, MEMCPY_H2D)
        msg = acl.err()
        untouched = acl.from_device(p, (4,), np.uint32)
        acl.lib.aclrtFree(p)
        result = {"rc": rc, "msg": msg, "untouched": untouched.tolist()}
    """)
    assert result["rc"] == ACL_ERROR_INVALID_PARAM
    assert "32 bytes at" in result["msg"] and "run past the end of its 16-byte device allocation" in result["msg"]
    assert result["untouched"] == [0xCDCDCDCD] * 4  # fresh device memory pattern, nothing written


def test_memcpy_checks_the_copy_kind():
    result, _ = run_child("""
        acl.init()
        host = np.zeros(4, np.float32)
        rc = acl.lib.aclrtMemcpy(host.ctypes.data, 16, host.ctypes.data, 16, MEMCPY_H2D)
        result = {"rc": rc, "msg": acl.err()}
    """)
    assert result["rc"] == ACL_ERROR_INVALID_PARAM
    assert "dst" in result["msg"] and "is host memory, expected device (aclrtMalloc) memory" in result["msg"]
