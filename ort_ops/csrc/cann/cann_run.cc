// Per-run CANN state for kernels.
#include "cann/cann_run.h"

#include <string>
#include <utility>

#include "cann/acl_op.h"

namespace ortops::cann {

OrtStatusPtr AclForKernel(const char* op, const AclApi** acl) {
  std::string error;
  *acl = GetAcl(&error);
  if (*acl == nullptr) return MakeError(std::string(op) + " on CANN: " + error, ORT_FAIL);
  return nullptr;
}

OrtStatusPtr CannRun::Begin(OrtKernelContext* context, const char* op, CannRun* run) {
  ORTOPS_RETURN_IF_ERROR(AclForKernel(op, &run->acl));
  void* stream = nullptr;
  ORTOPS_RETURN_IF_ERROR(Api().KernelContext_GetGPUComputeStream(context, &stream));
  run->stream = stream;
  return nullptr;
}

OrtStatusPtr CannRun::CopyOnDevice(void* dst, const void* src, size_t bytes) const {
  if (bytes == 0 || dst == src) return nullptr;
  const aclError code = acl->MemcpyAsync(dst, bytes, src, bytes, ACL_MEMCPY_DEVICE_TO_DEVICE, stream);
  if (code != ACL_SUCCESS) return AclError(*acl, "aclrtMemcpyAsync(device to device)", code);
  return nullptr;
}

OrtStatusPtr CannRun::CopyFromHostAndWait(void* dst, const void* src, size_t bytes) const {
  if (bytes == 0) return nullptr;
  aclError code = acl->MemcpyAsync(dst, bytes, src, bytes, ACL_MEMCPY_HOST_TO_DEVICE, stream);
  if (code != ACL_SUCCESS) return AclError(*acl, "aclrtMemcpyAsync(host to device)", code);
  code = acl->SynchronizeStream(stream);
  if (code != ACL_SUCCESS) return AclError(*acl, "aclrtSynchronizeStream(after a host to device copy)", code);
  return nullptr;
}

OrtStatusPtr CannRun::ZeroOnDevice(void* dst, size_t bytes) const {
  if (bytes == 0) return nullptr;
  const aclError code = acl->MemsetAsync(dst, bytes, 0, bytes, stream);
  if (code != ACL_SUCCESS) return AclError(*acl, "aclrtMemsetAsync(zeros)", code);
  return nullptr;
}

OrtStatusPtr CannRun::WaitForDeviceFaults(const std::string& who, const char* acl_op) const {
  const aclError code = acl->SynchronizeStream(stream);
  if (code == ACL_SUCCESS) return nullptr;
  const char* message = acl->GetRecentErrMsg();
  return MakeError(who + ": the device failed running CANN " + acl_op +
                       " (or work queued before it on the stream): aclrtSynchronizeStream returned ACL error " +
                       std::to_string(code) + (message != nullptr ? std::string(": ") + message : std::string()),
                   ORT_RUNTIME_EXCEPTION);
}

OrtStatusPtr KernelNodeName(const OrtKernelInfo* info, std::string* name) {
  size_t size = 0;
  ORTOPS_RETURN_IF_ERROR(Api().KernelInfo_GetNodeName(info, nullptr, &size));
  std::string text(size, '\0');
  ORTOPS_RETURN_IF_ERROR(Api().KernelInfo_GetNodeName(info, text.data(), &size));
  text.resize(size > 0 ? size - 1 : 0);  // size counts the terminating NUL
  *name = std::move(text);
  return nullptr;
}

aclDataType AclTypeOf(ONNXTensorElementDataType type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return ACL_FLOAT;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return ACL_FLOAT16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return ACL_BF16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return ACL_DOUBLE;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return ACL_INT32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return ACL_INT64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: return ACL_INT8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: return ACL_UINT8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16: return ACL_INT16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16: return ACL_UINT16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32: return ACL_UINT32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64: return ACL_UINT64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: return ACL_BOOL;
    default: return ACL_DT_UNDEFINED;
  }
}

}  // namespace ortops::cann
