"""Simulator streams: asynchronous in-order execution, async copies with pageable host memory
completing before they return (page-locked ones staying asynchronous), the synchronous copy,
events and synchronisation (with ACLSIM_STREAM_DELAY_US making races visible)."""

import pytest

from acl_ctypes import run_child

pytestmark = pytest.mark.usefixtures("sim_dir")

DELAY = {"ACLSIM_STREAM_DELAY_US": 100000}  # 0.1 s before every queued operation


RELU_ON_STREAM = """
        acl.init()
        s = acl.stream()
        x = np.array([-1.0, 2.0, -3.0, 4.0], np.float32)
        dx, dy = acl.malloc(16), acl.malloc(16)
        assert acl.lib.aclrtMemcpyAsync(dx, 16, x.ctypes.data, 16, MEMCPY_H2D, s) == 0
        d = (ctypes.c_int64 * 1)(4)
        desc = acl.lib.aclCreateTensorDesc(ACL_FLOAT, 1, d, ACL_FORMAT_ND)
        bx, by = acl.lib.aclCreateDataBuffer(dx, 16), acl.lib.aclCreateDataBuffer(dy, 16)
        arr = lambda *v: (ctypes.c_void_p * len(v))(*v)
        rc = acl.op_lib.aclopCompileAndExecute(b"Relu", 1, arr(desc), arr(bx), 1, arr(desc), arr(by), None, 0, 0, None, s)
"""


def test_reading_a_result_before_synchronising_sees_stale_data():
    # An async copy into page-locked (aclrtMallocHost) memory only enqueues the copy.
    result, _ = run_child(RELU_ON_STREAM + """
        pinned = acl.malloc_host(16)
        host = np.frombuffer((ctypes.c_float * 4).from_address(pinned), np.float32)
        host[:] = 7.0
        assert acl.lib.aclrtMemcpyAsync(pinned, 16, dy, 16, MEMCPY_D2H, s) == 0
        before = host.tolist()          # read without synchronising: stale
        sync = acl.lib.aclrtSynchronizeStream(s)
        after = host.tolist()
        result = {"rc": rc, "before": before, "sync": sync, "after": after, "pageable": acl.stat("pageable_copies")}
    """, **DELAY)
    assert result["rc"] == 0 and result["sync"] == 0
    assert result["before"] == [7.0, 7.0, 7.0, 7.0]
    assert result["after"] == [0.0, 2.0, 0.0, 4.0]
    assert result["pageable"] == 1  # only the H2D copy of x


def test_synchronous_memcpy_does_not_wait_for_queued_work():
    # aclrtMemcpy copies immediately, without implicit stream synchronisation: reading a
    # kernel's output before synchronising sees the fresh device memory (0xCD bytes).
    result, _ = run_child(RELU_ON_STREAM + """
        early = acl.from_device(dy, (4,), np.uint32).tolist()
        sync = acl.lib.aclrtSynchronizeStream(s)
        after = acl.from_device(dy, (4,), np.float32).tolist()
        result = {"rc": rc, "early": early, "sync": sync, "after": after}
    """, **DELAY)
    assert result["rc"] == 0 and result["sync"] == 0
    assert result["early"] == [0xCDCDCDCD] * 4
    assert result["after"] == [0.0, 2.0, 0.0, 4.0]


def test_async_copy_to_pageable_host_memory_returns_when_complete():
    # CANN: with non-page-locked host memory aclrtMemcpyAsync returns only after the copy
    # task is complete, so it also follows the work queued before it on the stream.
    result, _ = run_child(RELU_ON_STREAM + """
        host = np.full(4, 7.0, np.float32)
        assert acl.lib.aclrtMemcpyAsync(host.ctypes.data, 16, dy, 16, MEMCPY_D2H, s) == 0
        at_return = host.tolist()
        result = {"rc": rc, "at_return": at_return, "sync": acl.lib.aclrtSynchronizeStream(s),
                  "pageable": acl.stat("pageable_copies")}
    """, **DELAY)
    assert result == {"rc": 0, "at_return": [0.0, 2.0, 0.0, 4.0], "sync": 0, "pageable": 2}


def test_pageable_round_trip_on_one_stream_keeps_stream_order():
    # The pattern ORT's CANN EP uses for a device value consumed on CPU and then on the
    # device again: device -> pageable host buffer, then that buffer -> device, one stream.
    result, _ = run_child("""
        acl.init()
        s = acl.stream()
        a, b = acl.malloc(16), acl.malloc(16)
        assert acl.lib.aclrtMemsetAsync(a, 16, 0x01, 16, s) == 0      # slow producer
        host = np.zeros(4, np.int32)
        assert acl.lib.aclrtMemcpyAsync(host.ctypes.data, 16, a, 16, MEMCPY_D2H, s) == 0
        assert acl.lib.aclrtMemcpyAsync(b, 16, host.ctypes.data, 16, MEMCPY_H2D, s) == 0
        assert acl.lib.aclrtSynchronizeStream(s) == 0
        result = {"host": host.tolist(), "b": acl.from_device(b, (4,), np.int32).tolist()}
    """, **DELAY)
    assert result == {"host": [0x01010101] * 4, "b": [0x01010101] * 4}


def test_without_delay_results_are_correct_after_sync():
    result, _ = run_child("""
        acl.init()
        rc, msg, (y,) = acl.op("Relu", [np.array([-1.5, 0.5], np.float32)], [(ACL_FLOAT, [2])])
        result = {"rc": rc, "y": y.tolist(), "msg": msg}
    """)
    assert result == {"rc": 0, "y": [0.0, 0.5], "msg": None}


def test_async_copy_from_pageable_host_memory_is_complete_at_return():
    result, _ = run_child("""
        acl.init()
        s = acl.stream()
        p = acl.malloc(16)
        src = np.array([1, 2, 3, 4], np.float32)
        assert acl.lib.aclrtMemcpyAsync(p, 16, src.ctypes.data, 16, MEMCPY_H2D, s) == 0
        src[:] = 99  # reusing the buffer right away is safe: the copy has completed
        result = {"dev": acl.from_device(p, (4,), np.float32).tolist(), "pageable": acl.stat("pageable_copies")}
        acl.lib.aclrtFree(p)
    """, **DELAY)
    assert result == {"dev": [1.0, 2.0, 3.0, 4.0], "pageable": 1}


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
        result = {"dev": acl.from_device(p, (4,), np.float32).tolist(), "pageable": acl.stat("pageable_copies")}
        acl.lib.aclrtFree(p)
        acl.lib.aclrtFreeHost(pinned)
    """, **DELAY)
    assert result == {"dev": [99.0, 99.0, 99.0, 99.0], "pageable": 0}


def test_events_order_work_across_streams():
    result, _ = run_child("""
        acl.init()
        a, b = acl.stream(), acl.stream()
        ev = ctypes.c_void_p()
        assert acl.lib.aclrtCreateEvent(ctypes.byref(ev)) == 0
        p = acl.malloc(16)
        pinned = acl.malloc_host(16)  # page-locked: the copy below stays asynchronous
        host = np.frombuffer((ctypes.c_int32 * 4).from_address(pinned), np.int32)
        host[:] = 0
        assert acl.lib.aclrtMemsetAsync(p, 16, 0x01, 16, a) == 0       # slow producer on stream a
        assert acl.lib.aclrtRecordEvent(ev, a) == 0
        assert acl.lib.aclrtStreamWaitEvent(b, ev) == 0                # b waits for a's memset
        assert acl.lib.aclrtMemcpyAsync(pinned, 16, p, 16, MEMCPY_D2H, b) == 0
        early = host.tolist()
        assert acl.lib.aclrtSynchronizeStream(b) == 0
        after_b = host.tolist()
        assert acl.lib.aclrtSynchronizeEvent(ev) == 0
        result = {"early": early, "after_b": after_b, "destroy": acl.lib.aclrtDestroyEvent(ev),
                  "free": acl.lib.aclrtFree(p) or acl.lib.aclrtFreeHost(pinned), "da": acl.lib.aclrtDestroyStream(a), "db": acl.lib.aclrtDestroyStream(b),
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
