// Runs one CANN single op (aclopCompileAndExecute) on a stream, owning its descriptors,
// buffers and attributes; failures become ORT errors with the ACL code and message.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "cann/acl_api.h"
#include "common/ort_api.h"

namespace ortops::cann {

// Bytes of a tensor of ACL type `type` with `dims` (bool, the integer and float types; 0 for others).
size_t AclBytes(aclDataType type, const std::vector<int64_t>& dims);

// One tensor of an op, for AclOp::Tensors: device memory (or a constant in host memory, input
// only) of an ACL type and dims, format ND, `AclBytes(type, dims)` bytes.
struct AclTensor {
  const void* data = nullptr;
  aclDataType type = ACL_FLOAT;
  std::vector<int64_t> dims;
  bool host_constant = false;
};
inline AclTensor Device(const void* data, aclDataType type, std::vector<int64_t> dims) {
  return AclTensor{data, type, std::move(dims), false};
}
inline AclTensor F32(const void* data, std::vector<int64_t> dims) { return Device(data, ACL_FLOAT, std::move(dims)); }
inline AclTensor Mask(const void* data, std::vector<int64_t> dims) { return Device(data, ACL_BOOL, std::move(dims)); }
// A constant input (aclSetTensorConst) held in host memory at `host`, shape [1] unless given.
inline AclTensor HostConstant(const void* host, aclDataType type, std::vector<int64_t> dims = {1}) {
  return AclTensor{host, type, std::move(dims), true};
}

class AclOp {
 public:
  AclOp(const AclApi& acl, const char* type);
  ~AclOp();
  AclOp(const AclOp&) = delete;
  AclOp& operator=(const AclOp&) = delete;

  // Tensors have these dims (format ND unless given); `data` is device memory of `bytes` bytes.
  AclOp& Input(const void* data, size_t bytes, aclDataType type, const std::vector<int64_t>& dims,
               aclFormat format = ACL_FORMAT_ND);
  AclOp& Output(void* data, size_t bytes, aclDataType type, const std::vector<int64_t>& dims,
                aclFormat format = ACL_FORMAT_ND);
  // An omitted optional input (the ACL convention: an ACL_DT_UNDEFINED descriptor, no dims, no data).
  AclOp& AbsentInput();
  // A constant input (aclSetTensorConst): `host` holds its value in host memory, read when the op
  // is enqueued; no device copy is needed.
  AclOp& ConstInput(const void* host, size_t bytes, aclDataType type, const std::vector<int64_t>& dims);
  // The op's inputs, then its outputs, in order (as Input/ConstInput and Output would add them).
  AclOp& Tensors(std::initializer_list<AclTensor> inputs, std::initializer_list<AclTensor> outputs);
  AclOp& AttrInt(const char* name, int64_t value);
  AclOp& AttrFloat(const char* name, float value);
  AclOp& AttrBool(const char* name, bool value);
  AclOp& AttrInts(const char* name, const std::vector<int64_t>& values);
  AclOp& AttrString(const char* name, const char* value);
  // Enqueues the op on `stream`; an ORT error naming the op, ACL code and ACL message on failure.
  OrtStatusPtr Run(aclrtStream stream);

 private:
  aclTensorDesc* Add(bool input, const void* data, size_t bytes, aclDataType type, const std::vector<int64_t>& dims,
                     aclFormat format);

  const AclApi& acl_;
  std::string type_;
  std::string setup_error_;
  aclopAttr* attr_ = nullptr;
  std::vector<aclTensorDesc*> in_descs_, out_descs_;
  std::vector<aclDataBuffer*> in_bufs_, out_bufs_;
};

// An ORT error for a failed ACL call: what failed, the ACL error code, aclGetRecentErrMsg().
OrtStatusPtr AclError(const AclApi& acl, const std::string& what, aclError code);

}  // namespace ortops::cann
