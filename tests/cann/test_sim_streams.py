"""Simulator streams: asynchronous in-order execution, staging of pageable host copies,
events and synchronisation (with ACLSIM_STREAM_DELAY_US making races visible)."""

import pytest

from acl_ctypes import run_child

pytestmark = pytest.mark.usefixtures("sim_dir")

DELAY = {"ACLSIM_STREAM_DELAY_US": 100000}  # 0.1 s before every queued operation


def test_reading_a_result_before_synchronising_sees_stale_data():
    result, _ = run_child("""
        acl.init()
        s = acl.stream()
        x = np.array([-1.0, 2.0, -3.0, 4.0], np.float32)
        dx, dy = acl.malloc(16), acl.malloc(16)
        host = np.full(4, 7.0, np.float32)
        assert acl.lib.aclrtMemcpyAsync(dx, 16, x.ctypes.data, 16, MEMCPY_H2D, s) == 0
        rc, msg, _ = (0, None, None)
        # Relu on the stream, then an async copy back into ordinary host memory
        d = (ctypes.c_int64 * 1)(4)
        desc = acl.lib.aclCreateTensorDesc(ACL_FLOAT, 1, d, ACL_FORMAT_ND)
        bx, by = acl.lib.aclCreateDataBuffer(dx, 16), acl.lib.aclCreateDataBuffer(dy, 16)
        arr = lambda *v: (ctypes.c_void_p * len(v))(*v)
        rc = acl.op_lib.aclopCompileAndExecute(b"Relu", 1, arr(desc), arr(bx), 1, arr(desc), arr(by), None, 0, 0, None, s)
        assert acl.lib.aclrtMemcpyAsync(host.ctypes.data, 16, dy, 16, MEMCPY_D2H, s) == 0
        before = host.tolist()          # read without synchronising: stale
        sync = acl.lib.aclrtSynchronizeStream(s)
        after = host.tolist()
        result = {"rc": rc, "before": before, "sync": sync, "after": after}
    """, **DELAY)
    assert result["rc"] == 0 and result["sync"] == 0
    assert result["before"] == [7.0, 7.0, 7.0, 7.0]
    assert result["after"] == [0.0, 2.0, 0.0, 4.0]


def test_without_delay_results_are_correct_after_sync():
    result, _ = run_child("""
        acl.init()
        rc, msg, (y,) = acl.op("Relu", [np.array([-1.5, 0.5], np.float32)], [(ACL_FLOAT, [2])])
        result = {"rc": rc, "y": y.tolist(), "msg": msg}
    """)
    assert result == {"rc": 0, "y": [0.0, 0.5], "msg": None}


def test_async_copy_from_pageable_host_memory_is_staged_at_call_time():
    result, _ = run_child("""
        acl.init()
        s = acl.stream()
        p = acl.malloc(16)
        src = np.array([1, 2, 3, 4], np.float32)
        assert acl.lib.aclrtMemcpyAsync(p, 16, src.ctypes.data, 16, MEMCPY_H2D, s) == 0
        src[:] = 99  # reusing the buffer right away is safe: the bytes were staged
        acl.lib.aclrtSynchronizeStream(s)
        result = {"dev": acl.from_device(p, (4,), np.float32).tolist(), "staged": acl.stat("staged_copies")}
        acl.lib.aclrtFree(p)
    """, **DELAY)
    assert result == {"dev": [1.0, 2.0, 3.0, 4.0], "staged": 1}


def test_async_copy_from_pinned_host_memory_reads_in_stream_order():
    result, _ = run_child("""
        acl.init()
        s = acl.stream()
        p = acl.malloc(16)
        pinned = acl.malloc_host(16)
        view = np.frombuffer((ctypes.c_float * 4).from_address(pinned), np.float32)
        view[:] = [1, 2, 3, 4]
        assert acl.lib.aclrtMemcpyAsync(p, 16, pinned, 16, MEMCPY_H2D, s) == 0
        view[:] = 99  # pinned memory is read when the copy runs, after the stream delay
        acl.lib.aclrtSynchronizeStream(s)
        result = {"dev": acl.from_device(p, (4,), np.float32).tolist(), "staged": acl.stat("staged_copies")}
        acl.lib.aclrtFree(p)
        acl.lib.aclrtFreeHost(pinned)
    """, **DELAY)
    assert result == {"dev": [99.0, 99.0, 99.0, 99.0], "staged": 0}


def test_events_order_work_across_streams():
    result, _ = run_child("""
        acl.init()
        a, b = acl.stream(), acl.stream()
        ev = ctypes.c_void_p()
        assert acl.lib.aclrtCreateEvent(ctypes.byref(ev)) == 0
        p = acl.malloc(16)
        host = np.zeros(4, np.int32)
        assert acl.lib.aclrtMemsetAsync(p, 16, 0x01, 16, a) == 0       # slow producer on stream a
        assert acl.lib.aclrtRecordEvent(ev, a) == 0
        assert acl.lib.aclrtStreamWaitEvent(b, ev) == 0                # b waits for a's memset
        assert acl.lib.aclrtMemcpyAsync(host.ctypes.data, 16, p, 16, MEMCPY_D2H, b) == 0
        early = host.tolist()
        assert acl.lib.aclrtSynchronizeStream(b) == 0
        after_b = host.tolist()
        assert acl.lib.aclrtSynchronizeEvent(ev) == 0
        result = {"early": early, "after_b": after_b, "destroy": acl.lib.aclrtDestroyEvent(ev),
                  "free": acl.lib.aclrtFree(p), "da": acl.lib.aclrtDestroyStream(a), "db": acl.lib.aclrtDestroyStream(b),
                  "fin": acl.lib.aclFinalize()}
    """, **DELAY)
    assert result["early"] == [0, 0, 0, 0]
    assert result["after_b"] == [0x01010101] * 4
    assert result["destroy"] == 0 and result["free"] == 0 and result["da"] == 0 and result["db"] == 0
    assert result["fin"] == 0


def test_operations_on_one_stream_run_in_order():
    result, _ = run_child("""
        acl.init()
        s = acl.stream()
        p = acl.malloc(4)
        host = np.zeros(1, np.uint32)
        for v in range(1, 6):
            assert acl.lib.aclrtMemsetAsync(p, 4, v, 4, s) == 0
        assert acl.lib.aclrtMemcpyAsync(host.ctypes.data, 4, p, 4, MEMCPY_D2H, s) == 0
        assert acl.lib.aclrtSynchronizeDevice() == 0
        result = {"v": int(host[0])}
        acl.lib.aclrtFree(p)
    """, ACLSIM_STREAM_DELAY_US=2000)
    assert result["v"] == 0x05050505


def test_unknown_stream_is_rejected():
    result, _ = run_child("""
        acl.init()
        rc = acl.lib.aclrtSynchronizeStream(0x1234)
        result = {"rc": rc, "msg": acl.err()}
    """)
    assert result["rc"] == 100000
    assert "was not created by aclrtCreateStream" in result["msg"]
