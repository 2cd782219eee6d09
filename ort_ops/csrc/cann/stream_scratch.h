// Device scratch memory for work enqueued on a CANN stream, reused in stream order.
//
// The session's device allocator (ORT's arena) hands freed memory to the next caller at once. A
// kernel that frees scratch right after enqueueing the ops that read it lets a concurrent run on
// another stream overwrite it before those ops have run (wrong results). Here each stream has one
// scratch buffer, shared by every kernel of the library and reused only by later work on the same
// stream, which the stream executes after the earlier work. The buffer grows when a kernel needs
// more (the stream is synchronised first: queued work may still read the old one) and is released
// with the last kernel that used it, at session teardown; ORT synchronises a session's streams at
// the end of every run.
//
// A stream whose buffer is held by another thread (two threads enqueueing on one stream) gets a
// temporary buffer, freed after synchronising the stream. ORTOPS_CANN_SCRATCH=sync (read once)
// makes every lease temporary: the "synchronise before release" policy, for benchmarks.
#pragma once

#include <cstddef>
#include <mutex>
#include <set>

#include "cann/acl_api.h"
#include "common/ort_api.h"

namespace ortops::cann {

// Sub-buffers carved out of one lease start at multiples of this: CANN's vector units read
// 32-byte blocks, and 512 keeps every sub-buffer as aligned as a fresh device allocation.
constexpr size_t kScratchAlign = 512;
constexpr size_t ScratchAligned(size_t bytes) { return (bytes + kScratchAlign - 1) / kScratchAlign * kScratchAlign; }

class ScratchLease;

// One kernel's use of the per-stream buffers: releases its share of them when destroyed.
class ScratchUser {
 public:
  ScratchUser() = default;
  ScratchUser(const ScratchUser&) = delete;
  ScratchUser& operator=(const ScratchUser&) = delete;
  ~ScratchUser();

  // At least `bytes` of device memory (on `device`, the memory of the kernel's inputs) for ops
  // enqueued on `stream` while `lease` is held.
  OrtStatusPtr Acquire(OrtKernelContext* context, const OrtMemoryInfo* device, const AclApi& acl, aclrtStream stream,
                       size_t bytes, ScratchLease* lease);

 private:
  std::mutex mu_;
  std::set<aclrtStream> streams_;  // streams whose buffer this user holds a share of
};

// Device memory held for the ops being enqueued; given back (in stream order) when destroyed.
class ScratchLease {
 public:
  ScratchLease() = default;
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  ~ScratchLease();
  char* data() const { return static_cast<char*>(data_); }

 private:
  friend class ScratchUser;
  void* data_ = nullptr;
  aclrtStream stream_ = nullptr;
  const AclApi* acl_ = nullptr;
  OrtAllocator* temporary_ = nullptr;  // owns data_ when the stream's buffer was busy
};

// Live per-stream buffers (for tests and diagnostics).
size_t ScratchBuffersAlive();

}  // namespace ortops::cann
