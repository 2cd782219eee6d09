// Device and pinned-host memory: tracked host allocations with guard bytes.
//
// aclrtMalloc: like ACL, the size is aligned up to 32 bytes and padded with 32 more; the
// pointer is 32-byte aligned. The simulator puts a 32-byte guard zone before the block and
// fills [size, padded) after it with a guard pattern, checked on free and at aclFinalize.
// Fresh device memory is filled with 0xCD (device memory is not zeroed).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "internal.h"

namespace aclsim {
namespace {

constexpr size_t kAlign = 32;
constexpr size_t kFrontGuard = 32;
constexpr unsigned char kGuardByte = 0xFD;
constexpr unsigned char kFreshByte = 0xCD;

struct Allocation {
  size_t size;    // requested
  size_t padded;  // ACL's padded size: align32(size) + 32
  MemKind kind;
  uint64_t serial;
  bool baseline = false;  // held on purpose for the process's life (see aclsim.h): not a leak at exit
};

struct Heap {
  std::mutex mu;
  std::map<uintptr_t, Allocation> live;  // user pointer -> allocation
  std::set<uintptr_t> freed;             // recently freed user pointers (double-free check)
  uint64_t next_serial = 1;
  int64_t live_bytes = 0;
};

Heap& heap() {
  static Heap* h = new Heap();  // never destroyed: frees may come during process exit
  return *h;
}

// Depth of aclsimLeakBaselineScope(1) calls on this thread: allocations made inside are baseline.
thread_local int t_baseline_depth = 0;

const char* kind_name(MemKind k) {
  return k == MemKind::kDevice ? "device" : k == MemKind::kPinnedHost ? "pinned host" : "host";
}

size_t padded_size(size_t size) { return (size + kAlign - 1) / kAlign * kAlign + kAlign; }

unsigned char* raw_of(uintptr_t user) { return reinterpret_cast<unsigned char*>(user) - kFrontGuard; }

// Returns a description of guard damage, or "" when both guard zones are intact.
std::string check_guards(uintptr_t user, const Allocation& a) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(user);
  std::string out;
  for (size_t i = a.size; i < a.padded; ++i) {
    if (p[i] != kGuardByte) {
      size_t last = i;
      for (size_t j = i; j < a.padded; ++j)
        if (p[j] != kGuardByte) last = j;
      out = "write past the end: byte(s) " + std::to_string(i) + ".." + std::to_string(last) + " of a " +
            std::to_string(a.size) + "-byte " + kind_name(a.kind) + " allocation were overwritten";
      break;
    }
  }
  const unsigned char* front = raw_of(user);
  for (size_t i = 0; i < kFrontGuard; ++i) {
    if (front[i] != kGuardByte) {
      if (!out.empty()) out += "; ";
      out += "write before the start: byte " + std::to_string(static_cast<long>(i) - static_cast<long>(kFrontGuard)) +
             " of a " + std::to_string(a.size) + "-byte " + kind_name(a.kind) + " allocation was overwritten";
      break;
    }
  }
  return out;
}

aclError allocate(void** out, size_t size, MemKind kind, const char* api) {
  if (out == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "%s: output pointer is NULL", api);
  *out = nullptr;
  if (!initialized()) return fail(ACL_ERROR_UNINITIALIZE, "%s: aclInit has not been called", api);
  if (size == 0) return fail(ACL_ERROR_INVALID_PARAM, "%s: size must be greater than 0, got 0", api);
  size_t padded = padded_size(size);
  if (padded < size) return fail(ACL_ERROR_BAD_ALLOC, "%s: size %zu is too large", api, size);
  void* raw = std::aligned_alloc(kAlign, kFrontGuard + padded);
  if (raw == nullptr) return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: cannot allocate %zu bytes", api, size);
  unsigned char* r = static_cast<unsigned char*>(raw);
  std::memset(r, kGuardByte, kFrontGuard);
  std::memset(r + kFrontGuard, kind == MemKind::kDevice ? kFreshByte : 0, size);
  std::memset(r + kFrontGuard + size, kGuardByte, padded - size);
  uintptr_t user = reinterpret_cast<uintptr_t>(r + kFrontGuard);
  Heap& h = heap();
  {
    std::lock_guard<std::mutex> lock(h.mu);
    h.live[user] = Allocation{size, padded, kind, h.next_serial++, t_baseline_depth > 0};
    h.freed.erase(user);
    h.live_bytes += static_cast<int64_t>(size);
    stat_max(kPeakBytes, h.live_bytes);
  }
  stat_add(kLiveAllocations, 1);
  stat_add(kLiveBytes, static_cast<int64_t>(size));
  stat_add(kTotalAllocations, 1);
  *out = reinterpret_cast<void*>(user);
  return ACL_SUCCESS;
}

aclError release(void* ptr, MemKind kind, const char* api) {
  if (ptr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "%s: pointer is NULL", api);
  // Like cudaFree, wait for queued work first: a stream may still be using the block.
  wait_all_idle();
  uintptr_t user = reinterpret_cast<uintptr_t>(ptr);
  Heap& h = heap();
  std::unique_lock<std::mutex> lock(h.mu);
  auto it = h.live.find(user);
  if (it == h.live.end()) {
    if (h.freed.count(user)) {
      lock.unlock();
      stat_add(kDoubleFrees, 1);
      return fail(ACL_ERROR_RT_MEMORY_FREE, "%s(%p): double free: this pointer was already freed", api, ptr);
    }
    auto next = h.live.upper_bound(user);
    std::string inside;
    if (next != h.live.begin()) {
      auto prev = std::prev(next);
      if (user < prev->first + prev->second.padded)
        inside = " (it points " + std::to_string(user - prev->first) + " bytes into a " +
                 std::to_string(prev->second.size) + "-byte allocation)";
    }
    lock.unlock();
    stat_add(kInvalidFrees, 1);
    return fail(ACL_ERROR_RT_MEMORY_FREE, "%s(%p): unknown pointer: not allocated by %s%s", api, ptr,
                kind == MemKind::kDevice ? "aclrtMalloc" : "aclrtMallocHost", inside.c_str());
  }
  Allocation a = it->second;
  if (a.kind != kind) {
    lock.unlock();
    stat_add(kInvalidFrees, 1);
    return fail(ACL_ERROR_RT_MEMORY_FREE, "%s(%p): wrong free function for %s memory (use %s)", api, ptr,
                kind_name(a.kind), a.kind == MemKind::kDevice ? "aclrtFree" : "aclrtFreeHost");
  }
  std::string damage = check_guards(user, a);
  h.live.erase(it);
  h.freed.insert(user);
  if (h.freed.size() > 65536) h.freed.erase(h.freed.begin());
  h.live_bytes -= static_cast<int64_t>(a.size);
  lock.unlock();
  stat_add(kLiveAllocations, -1);
  stat_add(kLiveBytes, -static_cast<int64_t>(a.size));
  std::free(raw_of(user));
  if (!damage.empty()) {
    stat_add(kOverruns, 1);
    return fail(ACL_ERROR_RT_MEMORY_FREE, "%s(%p): heap corruption detected: %s", api, ptr, damage.c_str());
  }
  return ACL_SUCCESS;
}

}  // namespace

aclError classify(const void* p, size_t len, const char* what, MemRange* out) {
  *out = MemRange{};
  if (p == nullptr) return ACL_SUCCESS;
  uintptr_t u = reinterpret_cast<uintptr_t>(p);
  Heap& h = heap();
  std::unique_lock<std::mutex> lock(h.mu);
  auto next = h.live.upper_bound(u);
  if (next == h.live.begin()) return ACL_SUCCESS;
  auto prev = std::prev(next);
  const Allocation& a = prev->second;
  uintptr_t base = prev->first;
  if (u >= base + a.padded) return ACL_SUCCESS;  // not inside a tracked block
  out->kind = a.kind;
  out->base = reinterpret_cast<const void*>(base);
  out->size = a.size;
  size_t offset = u - base;
  if (offset + len > a.size) {
    size_t size = a.size;
    lock.unlock();
    stat_add(kOverruns, 1);
    return fail(ACL_ERROR_INVALID_PARAM,
                "%s: %zu bytes at %p run past the end of its %zu-byte %s allocation (offset %zu, %zu bytes too many)",
                what, len, p, size, kind_name(a.kind), offset, offset + len - size);
  }
  return ACL_SUCCESS;
}

namespace {

std::string describe(const std::map<uintptr_t, Allocation>& blocks) {
  if (blocks.empty()) return "";
  size_t bytes = 0;
  for (auto& kv : blocks) bytes += kv.second.size;
  std::string list;
  int shown = 0;
  for (auto& kv : blocks) {
    if (shown++ == 8) {
      list += ", ...";
      break;
    }
    char buf[128];
    std::snprintf(buf, sizeof(buf), "%s%p (%zu bytes, %s, allocation #%llu)", shown > 1 ? ", " : "",
                  reinterpret_cast<void*>(kv.first), kv.second.size, kind_name(kv.second.kind),
                  static_cast<unsigned long long>(kv.second.serial));
    list += buf;
  }
  return std::to_string(blocks.size()) + " allocation(s), " + std::to_string(bytes) + " bytes never freed: " + list;
}

// ACLSIM_LEAK_REPORT=1|fail (read at exit): report allocations still live when the process exits
// (the CANN EP never calls aclFinalize, so this is where a leaked device pool shows); with "fail"
// the process then exits with status 66 so a test or CI step fails. Baseline blocks (aclsim.h:
// aclsimLeakBaselineScope / aclsimMarkLeakBaseline; e.g. the arena onnxruntime's Python binding keeps
// for OrtValues on "cann" for the life of the process) are named in one note line and do not count.
__attribute__((destructor)) void report_leaks_at_exit() {
  const char* mode = std::getenv("ACLSIM_LEAK_REPORT");
  if (mode == nullptr || *mode == '\0' || std::strcmp(mode, "0") == 0) return;
  std::map<uintptr_t, Allocation> leaked, held;
  {
    Heap& h = heap();
    std::lock_guard<std::mutex> lock(h.mu);
    for (const auto& kv : h.live) (kv.second.baseline ? held : leaked).insert(kv);
  }
  if (!held.empty())
    std::fprintf(stderr, "[aclsim] leak report at exit: baseline (not counted): %s\n", describe(held).c_str());
  if (!leaked.empty()) std::fprintf(stderr, "[aclsim] leak report at exit: %s\n", describe(leaked).c_str());
  std::fflush(stderr);
  if (!leaked.empty() && std::strcmp(mode, "fail") == 0) std::_Exit(66);
}

}  // namespace

std::string describe_live_allocations() {
  Heap& h = heap();
  std::lock_guard<std::mutex> lock(h.mu);
  return describe(h.live);
}

size_t report_and_release_leaks() {
  Heap& h = heap();
  std::map<uintptr_t, Allocation> leaked;
  {
    std::lock_guard<std::mutex> lock(h.mu);
    leaked.swap(h.live);
    h.live_bytes = 0;
  }
  if (leaked.empty()) return 0;
  size_t bytes = 0;
  for (auto& kv : leaked) bytes += kv.second.size;
  const std::string text = describe(leaked);
  for (auto& kv : leaked) {
    std::string damage = check_guards(kv.first, kv.second);
    if (!damage.empty()) {
      stat_add(kOverruns, 1);
      fail(ACL_ERROR_RT_MEMORY_FREE, "aclFinalize: heap corruption in leaked block %p: %s",
           reinterpret_cast<void*>(kv.first), damage.c_str());
    }
    std::free(raw_of(kv.first));
  }
  stat_add(kLiveAllocations, -static_cast<int64_t>(leaked.size()));
  stat_add(kLiveBytes, -static_cast<int64_t>(bytes));
  stat_add(kLeaksDetected, static_cast<int64_t>(leaked.size()));
  fail(ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED, "aclFinalize: memory leak: %s", text.c_str());
  return leaked.size();
}

}  // namespace aclsim

extern "C" {

ACL_FUNC_VISIBILITY aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  aclError rc = aclsim::allocate(devPtr, size, aclsim::MemKind::kDevice, "aclrtMalloc");
  ACLSIM_TRACE("aclrtMalloc(size=%zu, policy=%d) = %d, *devPtr=%p", size, static_cast<int>(policy), rc,
               devPtr ? *devPtr : nullptr);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclrtFree(void* devPtr) {
  aclError rc = aclsim::release(devPtr, aclsim::MemKind::kDevice, "aclrtFree");
  ACLSIM_TRACE("aclrtFree(devPtr=%p) = %d", devPtr, rc);
  return rc;
}

ACL_FUNC_VISIBILITY int64_t aclsimMarkLeakBaseline(void) {
  aclsim::Heap& h = aclsim::heap();
  int64_t marked = 0;
  {
    std::lock_guard<std::mutex> lock(h.mu);
    for (auto& kv : h.live)
      if (!kv.second.baseline) {
        kv.second.baseline = true;
        ++marked;
      }
  }
  ACLSIM_TRACE("aclsimMarkLeakBaseline() = %lld", static_cast<long long>(marked));
  return marked;
}

ACL_FUNC_VISIBILITY int aclsimLeakBaselineScope(int enter) {
  if (enter) {
    ++aclsim::t_baseline_depth;
  } else if (aclsim::t_baseline_depth > 0) {
    --aclsim::t_baseline_depth;
  }
  ACLSIM_TRACE("aclsimLeakBaselineScope(enter=%d) = %d", enter, aclsim::t_baseline_depth);
  return aclsim::t_baseline_depth;
}

ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void** hostPtr, size_t size) {
  aclError rc = aclsim::allocate(hostPtr, size, aclsim::MemKind::kPinnedHost, "aclrtMallocHost");
  ACLSIM_TRACE("aclrtMallocHost(size=%zu) = %d, *hostPtr=%p", size, rc, hostPtr ? *hostPtr : nullptr);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void* hostPtr) {
  aclError rc = aclsim::release(hostPtr, aclsim::MemKind::kPinnedHost, "aclrtFreeHost");
  ACLSIM_TRACE("aclrtFreeHost(hostPtr=%p) = %d", hostPtr, rc);
  return rc;
}

}  // extern "C"
