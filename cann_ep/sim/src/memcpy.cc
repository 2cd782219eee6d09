// aclrtMemcpy (synchronous), aclrtMemcpyAsync and aclrtMemsetAsync (stream ordered).
//
// aclrtMemcpy copies immediately, with no implicit stream or device synchronisation (CANN
// documentation of aclrtMemcpy): reading a result that queued work has not produced yet is stale.
//
// aclrtMemcpyAsync follows the CANN runtime documentation of aclrtMemcpyAsync: with
// page-locked host memory (aclrtMallocHost) or device memory on both sides it only enqueues
// the copy (the caller must synchronise); when either side is ordinary (non-page-locked) host
// memory "this API returns only after the memory copy task is complete". The simulator enqueues
// such a copy in stream order and waits for it, so it runs after the work queued before it on
// that stream and the host buffer may be read or reused as soon as the call returns.
#include <cstring>

#include "internal.h"

namespace aclsim {
namespace {

const char* kind_name(aclrtMemcpyKind k) {
  switch (k) {
    case ACL_MEMCPY_HOST_TO_HOST: return "HOST_TO_HOST";
    case ACL_MEMCPY_HOST_TO_DEVICE: return "HOST_TO_DEVICE";
    case ACL_MEMCPY_DEVICE_TO_HOST: return "DEVICE_TO_HOST";
    case ACL_MEMCPY_DEVICE_TO_DEVICE: return "DEVICE_TO_DEVICE";
    case ACL_MEMCPY_DEFAULT: return "DEFAULT";
    default: return "UNSUPPORTED";
  }
}

bool is_device(const MemRange& r) { return r.kind == MemKind::kDevice; }

// Counts a copy by the memory it moves between (whatever kind the caller declared).
void count_copy(const MemRange& dst, const MemRange& src) {
  if (is_device(dst)) {
    stat_add(is_device(src) ? kCopiesD2D : kCopiesH2D, 1);
  } else if (is_device(src)) {
    stat_add(kCopiesD2H, 1);
  }
}

// Validates a copy; on success fills the source range info (to decide on staging).
aclError check_copy(const char* api, void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind,
                    MemRange* src_range) {
  if (count > destMax)
    return fail(ACL_ERROR_INVALID_PARAM, "%s: count %zu is larger than destMax %zu", api, count, destMax);
  if (count == 0) return ACL_SUCCESS;
  if (dst == nullptr || src == nullptr)
    return fail(ACL_ERROR_INVALID_PARAM, "%s: %s is NULL", api, dst == nullptr ? "dst" : "src");
  MemRange d;
  std::string dwhat = std::string(api) + " dst", swhat = std::string(api) + " src";
  if (aclError rc = classify(dst, count, dwhat.c_str(), &d)) return rc;
  if (aclError rc = classify(src, count, swhat.c_str(), src_range)) return rc;
  bool want_dst_dev, want_src_dev;
  switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST:
      want_dst_dev = false;
      want_src_dev = false;
      break;
    case ACL_MEMCPY_HOST_TO_DEVICE:
      want_dst_dev = true;
      want_src_dev = false;
      break;
    case ACL_MEMCPY_DEVICE_TO_HOST:
      want_dst_dev = false;
      want_src_dev = true;
      break;
    case ACL_MEMCPY_DEVICE_TO_DEVICE:
      want_dst_dev = true;
      want_src_dev = true;
      break;
    case ACL_MEMCPY_DEFAULT: return ACL_SUCCESS;
    default: return fail(ACL_ERROR_INVALID_PARAM, "%s: unsupported copy kind %d", api, static_cast<int>(kind));
  }
  if (want_dst_dev != is_device(d))
    return fail(ACL_ERROR_INVALID_PARAM, "%s(%s): dst %p is %s memory, expected %s memory", api, kind_name(kind), dst,
                is_device(d) ? "device" : "host", want_dst_dev ? "device (aclrtMalloc)" : "host");
  if (want_src_dev != is_device(*src_range))
    return fail(ACL_ERROR_INVALID_PARAM, "%s(%s): src %p is %s memory, expected %s memory", api, kind_name(kind), src,
                is_device(*src_range) ? "device" : "host", want_src_dev ? "device (aclrtMalloc)" : "host");
  return ACL_SUCCESS;
}

}  // namespace
}  // namespace aclsim

extern "C" {

ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count,
                                         aclrtMemcpyKind kind) {
  aclsim::MemRange s, d;
  aclError rc = aclsim::check_copy("aclrtMemcpy", dst, destMax, src, count, kind, &s);
  if (rc == ACL_SUCCESS && count > 0) rc = aclsim::classify(dst, count, "aclrtMemcpy dst", &d);
  if (rc == ACL_SUCCESS && count > 0) {
    aclsim::count_copy(d, s);
    std::memmove(dst, src, count);
  }
  ACLSIM_TRACE("aclrtMemcpy(dst=%p, destMax=%zu, src=%p, count=%zu, kind=%s) = %d", dst, destMax, src, count,
               aclsim::kind_name(kind), rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count,
                                              aclrtMemcpyKind kind, aclrtStream stream) {
  aclsim::MemRange s;
  aclError rc = aclsim::check_copy("aclrtMemcpyAsync", dst, destMax, src, count, kind, &s);
  bool pageable = false;
  if (rc == ACL_SUCCESS && !aclsim::stream_valid(stream))
    rc = aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpyAsync: stream %p was not created by aclrtCreateStream",
                      stream);
  if (rc == ACL_SUCCESS) {
    std::string label = std::string("aclrtMemcpyAsync(") + aclsim::kind_name(kind) + ")";
    aclsim::MemRange d;
    if (count > 0) rc = aclsim::classify(dst, count, "aclrtMemcpyAsync dst", &d);
    pageable = count > 0 && (s.kind == aclsim::MemKind::kHost || d.kind == aclsim::MemKind::kHost);
    if (rc == ACL_SUCCESS && count > 0) aclsim::count_copy(d, s);
    if (rc == ACL_SUCCESS) {
      rc = aclsim::enqueue(stream, label, [dst, src, count] {
        if (count > 0) std::memmove(dst, src, count);
        return aclsim::TaskResult{};
      });
    }
    if (rc == ACL_SUCCESS && pageable) {
      // Non-page-locked host memory: the call returns once the copy (and so everything queued
      // before it on this stream) has run. Async errors stay queued for the next synchronisation.
      aclsim::stat_add(aclsim::kPageableCopies, 1);
      aclsim::wait_stream(stream);
    }
  }
  ACLSIM_TRACE("aclrtMemcpyAsync(dst=%p, destMax=%zu, src=%p, count=%zu, kind=%s, stream=%p) = %d%s", dst, destMax, src,
               count, aclsim::kind_name(kind), stream, rc, pageable ? " [pageable: completed]" : "");
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value, size_t count,
                                              aclrtStream stream) {
  aclError rc = ACL_SUCCESS;
  aclsim::MemRange r;
  if (count > maxCount) {
    rc = aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclrtMemsetAsync: count %zu is larger than maxCount %zu", count,
                      maxCount);
  } else if (count > 0 && devPtr == nullptr) {
    rc = aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclrtMemsetAsync: devPtr is NULL");
  } else if (count > 0) {
    rc = aclsim::classify(devPtr, count, "aclrtMemsetAsync devPtr", &r);
    if (rc == ACL_SUCCESS && r.kind != aclsim::MemKind::kDevice)
      rc = aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclrtMemsetAsync: devPtr %p is not device memory (aclrtMalloc)",
                        devPtr);
  }
  if (rc == ACL_SUCCESS) {
    rc = aclsim::enqueue(stream, "aclrtMemsetAsync", [devPtr, value, count] {
      if (count > 0) std::memset(devPtr, value, count);
      return aclsim::TaskResult{};
    });
  }
  ACLSIM_TRACE("aclrtMemsetAsync(devPtr=%p, maxCount=%zu, value=%d, count=%zu, stream=%p) = %d", devPtr, maxCount,
               value, count, stream, rc);
  return rc;
}

}  // extern "C"
