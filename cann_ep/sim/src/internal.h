// Internal interface shared by the three simulator libraries (libascendcl exports it).
#pragma once

#include <acl/acl.h>

#include <cstdint>
#include <functional>
#include <string>

#define ACLSIM_INTERNAL __attribute__((visibility("default")))

namespace aclsim {

// ---- errors.cc: the thread's "recent error message" and error reporting ----
// Records `code` + message for aclGetRecentErrMsg() on this thread, prints one line on
// stderr, counts it in the "errors" stat, and returns `code`.
ACLSIM_INTERNAL aclError fail(aclError code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Same, with an already formatted message.
ACLSIM_INTERNAL aclError fail_msg(aclError code, const std::string& msg);
// Prints a warning line on stderr (no error state).
ACLSIM_INTERNAL void warn(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// ---- trace.cc: ACLSIM_TRACE=1|stderr|<path> logs every ACL call, one line each ----
ACLSIM_INTERNAL bool trace_on();
ACLSIM_INTERNAL void trace(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
#define ACLSIM_TRACE(...)                                   \
  do {                                                      \
    if (::aclsim::trace_on()) ::aclsim::trace(__VA_ARGS__); \
  } while (0)
ACLSIM_INTERNAL const char* dtype_name(aclDataType t);

// ---- stats.cc: counters for tests (see aclsim.h) ----
enum Stat {
  kLiveAllocations,
  kLiveBytes,
  kPeakBytes,
  kTotalAllocations,
  kLeaksDetected,
  kDoubleFrees,
  kInvalidFrees,
  kOverruns,
  kErrors,
  kOpsLaunched,
  kOpsExecuted,
  kPageableCopies,
  kCopiesH2D,
  kCopiesD2H,
  kCopiesD2D,
  kStreamSyncs,
  kDeviceFaults,
  kStatCount
};
ACLSIM_INTERNAL void stat_add(Stat s, int64_t delta);
ACLSIM_INTERNAL void stat_max(Stat s, int64_t value);
// Counts one executed op of `op_type` (read back as stat "op:<type>" / aclsimOpCounts()).
ACLSIM_INTERNAL void stat_op_executed(const char* op_type);

// ---- runtime.cc ----
ACLSIM_INTERNAL bool initialized();
ACLSIM_INTERNAL int64_t stream_delay_us();  // ACLSIM_STREAM_DELAY_US, read at aclInit
ACLSIM_INTERNAL std::string soc_name();     // aclrtGetSocName (ACLSIM_SOC_NAME, read at aclInit)

// ---- soc.cc: the SoC support matrix (the one table of which op types each SoC family lacks) ----
// CANN's family of the current SoC ("ascend910b", "ascend310p", ...), or "unknown".
ACLSIM_INTERNAL const char* soc_family();
// "" when `op_type` is available on the current SoC; otherwise the message saying why not.
ACLSIM_INTERNAL std::string soc_op_unavailable(const char* op_type);

// ---- memory.cc ----
enum class MemKind { kHost, kDevice, kPinnedHost };
struct MemRange {
  MemKind kind = MemKind::kHost;  // kHost: not tracked (ordinary host memory)
  const void* base = nullptr;     // allocation start (tracked kinds only)
  size_t size = 0;                // requested size of the allocation
};
// Classifies [p, p+len). Returns ACL_SUCCESS, or an error (reported via fail) when the
// range starts inside a tracked allocation but runs past its end. `what` names the
// argument in the message.
ACLSIM_INTERNAL aclError classify(const void* p, size_t len, const char* what, MemRange* out);
// Frees every tracked allocation, reporting each as a leak. Returns the number of leaks.
ACLSIM_INTERNAL size_t report_and_release_leaks();
// One line describing the live tracked allocations ("" when none): count, bytes, the first few.
ACLSIM_INTERNAL std::string describe_live_allocations();

// ---- stream.cc ----
// A task runs on the stream's worker thread; it returns ACL_SUCCESS or an error code
// (and message) that the next synchronisation of that stream reports.
struct TaskResult {
  aclError code = ACL_SUCCESS;
  std::string message;
};
using Task = std::function<TaskResult()>;
// Enqueues `task` on `stream` (nullptr = default stream). `label` is used in messages.
ACLSIM_INTERNAL aclError enqueue(aclrtStream stream, const std::string& label, Task task);
ACLSIM_INTERNAL bool stream_valid(aclrtStream stream);
// Blocks until everything enqueued on `stream` so far has run; async errors stay queued for
// the next synchronisation of that stream (used by copies that complete before returning).
ACLSIM_INTERNAL void wait_stream(aclrtStream stream);
ACLSIM_INTERNAL aclError synchronize_all();  // waits for every stream, reports async errors
ACLSIM_INTERNAL void wait_all_idle();        // waits for every stream, keeps errors queued
ACLSIM_INTERNAL void destroy_all_streams();  // at aclFinalize

}  // namespace aclsim
