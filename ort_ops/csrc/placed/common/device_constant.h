// Device bytes a placed kernel derives once from a constant input and reads in every later run
// (the int32 positions of a Gather of constant indices): one host-to-device copy per session
// instead of one per run. Built on the first run that asks, from that run's device allocator, and
// read-only afterwards, so runs on other streams may read it concurrently: the build synchronises
// its stream, so the bytes are on the device before any run can see them. Freed with the kernel
// (at session teardown, after ORT has synchronised the session's streams).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "cann/cann_run.h"
#include "common/ort_api.h"

namespace ortops::placed {

// Whether input `index` of the node is a constant initializer (ORT's KernelInfoGetConstantInput_tensor).
bool IsConstantInput(const OrtKernelInfo* info, size_t index);

class DeviceConstant {
 public:
  DeviceConstant() = default;
  DeviceConstant(const DeviceConstant&) = delete;
  DeviceConstant& operator=(const DeviceConstant&) = delete;
  ~DeviceConstant();

  // *data: the device copy of host_bytes() built for `key` (what the bytes depend on besides the
  // constant, e.g. the data's shape): built now if nothing is built yet. nullptr (no error) when
  // the bytes were built for another key: the caller copies its own for this run.
  OrtStatusPtr Get(OrtKernelContext* context, const OrtMemoryInfo* device, const cann::CannRun& run,
                   const std::vector<int64_t>& key, const std::function<std::vector<char>()>& host_bytes,
                   const void** data);

 private:
  std::mutex mu_;
  bool built_ = false;
  std::vector<int64_t> key_;
  void* data_ = nullptr;
  OrtAllocator* allocator_ = nullptr;  // owns data_
};

}  // namespace ortops::placed
