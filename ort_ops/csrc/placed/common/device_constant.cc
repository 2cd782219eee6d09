#include "placed/common/device_constant.h"

namespace ortops::placed {

bool IsConstantInput(const OrtKernelInfo* info, size_t index) {
  int is_constant = 0;
  const OrtValue* value = nullptr;
  OrtStatusPtr status = Api().KernelInfoGetConstantInput_tensor(info, index, &is_constant, &value);
  if (status != nullptr) {
    Api().ReleaseStatus(status);
    return false;
  }
  return is_constant != 0 && value != nullptr;
}

DeviceConstant::~DeviceConstant() {
  if (data_ != nullptr) allocator_->Free(allocator_, data_);
  if (allocator_ != nullptr) Api().ReleaseAllocator(allocator_);
}

OrtStatusPtr DeviceConstant::Get(OrtKernelContext* context, const OrtMemoryInfo* device, const cann::CannRun& run,
                                 const std::vector<int64_t>& key, const std::function<std::vector<char>()>& host_bytes,
                                 const void** data) {
  std::lock_guard<std::mutex> lock(mu_);
  *data = nullptr;
  if (built_) {
    if (key == key_) *data = data_;
    return nullptr;
  }
  const std::vector<char> bytes = host_bytes();
  if (allocator_ == nullptr) ORTOPS_RETURN_IF_ERROR(Api().KernelContext_GetAllocator(context, device, &allocator_));
  void* buffer = bytes.empty() ? nullptr : allocator_->Alloc(allocator_, bytes.size());
  if (!bytes.empty() && buffer == nullptr) {
    return Api().CreateStatus(ORT_FAIL, "cannot allocate device memory for a kernel's constant positions");
  }
  OrtStatusPtr status = run.CopyFromHostAndWait(buffer, bytes.data(), bytes.size());
  if (status != nullptr) {
    if (buffer != nullptr) allocator_->Free(allocator_, buffer);
    return status;
  }
  data_ = buffer;
  key_ = key;
  built_ = true;
  *data = data_;
  return nullptr;
}

}  // namespace ortops::placed
