// Simulator-only C entry points exported by libascendcl.so (for tests and tools).
#pragma once
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Returns the named counter, or -1 for an unknown name. Names: live_allocations,
// live_bytes, peak_bytes, total_allocations, leaks_detected, double_frees, invalid_frees,
// overruns, errors, ops_launched, ops_executed, pageable_copies, copies_h2d, copies_d2h,
// copies_d2d (aclrtMemcpy/aclrtMemcpyAsync calls by the memory they actually copy between; host
// means ordinary or page-locked host memory), stream_syncs (aclrtSynchronizeStream/Device calls),
// device_faults (ops that faulted when they ran, e.g. an index out of range);
// "op:<op type>" is the number of executed ops of that type (0 for a type that never ran).
__attribute__((visibility("default"))) int64_t aclsimGetStat(const char* name);
// Executed ops per op type, "Type=count,Type=count" sorted by type ("" when none ran). The
// string belongs to the calling thread and stays valid until its next call.
__attribute__((visibility("default"))) const char* aclsimOpCounts(void);
// Resets every counter (per-op-type counts too) except live_allocations / live_bytes.
__attribute__((visibility("default"))) void aclsimResetStats(void);
// Makes the next aclopCompileAndExecute of `op_type` ("*" = any op) fail once with
// `error_code` (0 = default ACL_ERROR_RT_AICORE_EXCEPTION). NULL disarms.
__attribute__((visibility("default"))) void aclsimFailNextOp(const char* op_type, int32_t error_code);
// Makes the next aclopCompileAndExecute of `op_type` ("*" = any op) enqueue normally and then fault
// on the device when it runs: the stream's next synchronisation returns ACL_ERROR_RT_AICORE_EXCEPTION
// (like a bad index found by a kernel). NULL disarms. ACLSIM_FAULT_NEXT_OP=<op type> does the same.
__attribute__((visibility("default"))) void aclsimFaultNextOp(const char* op_type);
// CANN's family of the SoC (ACLSIM_SOC_NAME at aclInit, default Ascend910B1): "ascend910b",
// "ascend910_93", "ascend910", "ascend310p", "ascend310b", "ascend950", or "unknown".
__attribute__((visibility("default"))) const char* aclsimSocFamily(void);
// 1 if the SoC support matrix (src/soc.cc) has `op_type` on the current SoC, else 0. (Whether the
// simulator implements it is separate: aclopCompileAndExecute then returns ACL_ERROR_OP_NOT_FOUND.)
__attribute__((visibility("default"))) int aclsimOpAvailable(const char* op_type);
// The leak baseline: allocations held on purpose for the life of the process, which ACLSIM_LEAK_REPORT
// names in a note and neither counts nor fails for (the stats still count them). Every other
// allocation still live at exit is a leak as before.
// aclsimLeakBaselineScope(1) / (0) enters / leaves a baseline scope on the calling thread (scopes
// nest; returns the new depth): aclrtMalloc / aclrtMallocHost inside one allocate baseline blocks.
// cann_ep.use_simulator() wraps onnxruntime's OrtValue constructors in one, because the Python
// binding keeps the arena they allocate from ("cann": 1 MiB, growing) until the process ends.
__attribute__((visibility("default"))) int aclsimLeakBaselineScope(int enter);
// Marks every allocation live now as baseline. Returns the number marked.
__attribute__((visibility("default"))) int64_t aclsimMarkLeakBaseline(void);
// Simulator version string.
__attribute__((visibility("default"))) const char* aclsimVersion(void);

#ifdef __cplusplus
}
#endif
