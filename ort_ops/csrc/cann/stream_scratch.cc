// Per-stream scratch buffers (see stream_scratch.h).
#include "cann/stream_scratch.h"

#include "cann/acl_op.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace ortops::cann {
namespace {

struct Slot {
  OrtAllocator* allocator = nullptr;  // from the first kernel context on this stream; owned
  void* data = nullptr;
  size_t bytes = 0;
  size_t users = 0;   // ScratchUsers holding a share
  bool busy = false;  // leased out
};

struct Registry {
  std::mutex mu;
  std::map<aclrtStream, Slot> slots;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: kernels may be released at exit
  return *r;
}

bool AlwaysSync() {
  static const bool sync = [] {
    const char* v = std::getenv("ORTOPS_CANN_SCRATCH");
    return v != nullptr && std::strcmp(v, "sync") == 0;
  }();
  return sync;
}

void FreeSlot(Slot* slot) {
  if (slot->data != nullptr) slot->allocator->Free(slot->allocator, slot->data);
  if (slot->allocator != nullptr) Api().ReleaseAllocator(slot->allocator);
  *slot = Slot{};
}

OrtStatusPtr OutOfMemory(size_t bytes) {
  return MakeError("CANN kernel: cannot allocate " + std::to_string(bytes) + " bytes of device scratch memory",
                   ORT_FAIL);
}

OrtStatusPtr Synchronize(const AclApi& acl, aclrtStream stream) {
  const aclError rc = acl.SynchronizeStream(stream);
  return rc == ACL_SUCCESS ? nullptr : AclError(acl, "aclrtSynchronizeStream (scratch release)", rc);
}

}  // namespace

ScratchUser::~ScratchUser() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (aclrtStream stream : streams_) {
    auto it = r.slots.find(stream);
    if (it == r.slots.end() || --it->second.users != 0) continue;
    FreeSlot(&it->second);
    r.slots.erase(it);
  }
}

OrtStatusPtr ScratchUser::Acquire(OrtKernelContext* context, const OrtMemoryInfo* device, const AclApi& acl,
                                  aclrtStream stream, size_t bytes, ScratchLease* lease) {
  lease->stream_ = stream;
  lease->acl_ = &acl;
  Registry& r = registry();
  std::unique_lock<std::mutex> lock(r.mu);
  Slot& slot = r.slots[stream];
  if (slot.busy || AlwaysSync()) {  // a temporary buffer, freed after synchronising the stream
    if (slot.allocator == nullptr && slot.users == 0) r.slots.erase(stream);
    lock.unlock();
    ORTOPS_RETURN_IF_ERROR(Api().KernelContext_GetAllocator(context, device, &lease->temporary_));
    lease->data_ = lease->temporary_->Alloc(lease->temporary_, bytes);
    return lease->data_ != nullptr ? nullptr : OutOfMemory(bytes);
  }
  if (slot.allocator == nullptr) {
    OrtStatusPtr status = Api().KernelContext_GetAllocator(context, device, &slot.allocator);
    if (status != nullptr) {
      if (slot.users == 0) r.slots.erase(stream);
      return status;
    }
  }
  {
    std::lock_guard<std::mutex> mine(mu_);
    if (streams_.insert(stream).second) ++slot.users;
  }
  if (slot.bytes < bytes) {
    if (slot.data != nullptr) {  // queued work on this stream may still read the old buffer
      slot.busy = true;
      lock.unlock();
      OrtStatusPtr synced = Synchronize(acl, stream);
      lock.lock();
      slot.busy = false;
      if (synced != nullptr) return synced;
      slot.allocator->Free(slot.allocator, slot.data);
      slot.data = nullptr;
      slot.bytes = 0;
    }
    slot.data = slot.allocator->Alloc(slot.allocator, bytes);
    if (slot.data == nullptr) return OutOfMemory(bytes);
    slot.bytes = bytes;
  }
  slot.busy = true;
  lease->data_ = slot.data;
  return nullptr;
}

ScratchLease::~ScratchLease() {
  if (data_ == nullptr) return;
  if (temporary_ != nullptr) {
    // Nothing orders a later user of this memory after the queued ops: wait for them first. A
    // failed synchronisation is reported by the stream's next synchronisation (ORT's, at run end).
    acl_->SynchronizeStream(stream_);
    temporary_->Free(temporary_, data_);
    Api().ReleaseAllocator(temporary_);
    return;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.slots.find(stream_);
  if (it != r.slots.end()) it->second.busy = false;
}

size_t ScratchBuffersAlive() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  size_t n = 0;
  for (const auto& kv : r.slots) n += kv.second.data != nullptr ? 1 : 0;
  return n;
}

}  // namespace ortops::cann
