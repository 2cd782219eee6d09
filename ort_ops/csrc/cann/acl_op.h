// Runs one CANN single op (aclopCompileAndExecute) on a stream, owning its descriptors,
// buffers and attributes; failures become ORT errors with the ACL code and message.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cann/acl_api.h"
#include "common/ort_api.h"

namespace ortops::cann {

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
