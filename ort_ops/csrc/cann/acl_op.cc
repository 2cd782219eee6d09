// One CANN single op: descriptors, buffers, attributes, aclopCompileAndExecute.
#include "cann/acl_op.h"

namespace ortops::cann {

OrtStatusPtr AclError(const AclApi& acl, const std::string& what, aclError code) {
  const char* message = acl.GetRecentErrMsg();
  return MakeError(what + " failed with ACL error " + std::to_string(code) +
                       (message != nullptr ? std::string(": ") + message : std::string()),
                   ORT_RUNTIME_EXCEPTION);
}

size_t AclBytes(aclDataType type, const std::vector<int64_t>& dims) {
  size_t count = 1;
  for (int64_t v : dims) count *= static_cast<size_t>(v);
  switch (type) {
    case ACL_BOOL:
    case ACL_INT8:
    case ACL_UINT8: return count;
    case ACL_FLOAT16:
    case ACL_BF16:
    case ACL_INT16:
    case ACL_UINT16: return count * 2;
    case ACL_FLOAT:
    case ACL_INT32: return count * 4;
    case ACL_DOUBLE:
    case ACL_INT64: return count * 8;
    default: return 0;
  }
}

AclOp::AclOp(const AclApi& acl, const char* type) : acl_(acl), type_(type) {
  attr_ = acl_.CreateAttr();
  if (attr_ == nullptr) setup_error_ = "aclopCreateAttr returned NULL";
}

AclOp::~AclOp() {
  for (aclTensorDesc* d : in_descs_) acl_.DestroyTensorDesc(d);
  for (aclTensorDesc* d : out_descs_) acl_.DestroyTensorDesc(d);
  for (aclDataBuffer* b : in_bufs_) acl_.DestroyDataBuffer(b);
  for (aclDataBuffer* b : out_bufs_) acl_.DestroyDataBuffer(b);
  if (attr_ != nullptr) acl_.DestroyAttr(attr_);
}

aclTensorDesc* AclOp::Add(bool input, const void* data, size_t bytes, aclDataType type,
                          const std::vector<int64_t>& dims, aclFormat format) {
  // CANN treats a scalar as shape [1] (its tiling's EnsureNotScalar); pass it that way.
  static const std::vector<int64_t> kScalar{1};
  const std::vector<int64_t>& shape = dims.empty() ? kScalar : dims;
  aclTensorDesc* desc = acl_.CreateTensorDesc(type, static_cast<int>(shape.size()), shape.data(), format);
  aclDataBuffer* buf = acl_.CreateDataBuffer(const_cast<void*>(data), bytes);
  if (desc == nullptr || buf == nullptr) setup_error_ = "aclCreateTensorDesc/aclCreateDataBuffer returned NULL";
  (input ? in_descs_ : out_descs_).push_back(desc);
  (input ? in_bufs_ : out_bufs_).push_back(buf);
  return desc;
}

AclOp& AclOp::Input(const void* data, size_t bytes, aclDataType type, const std::vector<int64_t>& dims,
                    aclFormat format) {
  Add(true, data, bytes, type, dims, format);
  return *this;
}

AclOp& AclOp::Tensors(std::initializer_list<AclTensor> inputs, std::initializer_list<AclTensor> outputs) {
  for (const AclTensor& t : inputs) {
    if (t.host_constant) {
      ConstInput(t.data, AclBytes(t.type, t.dims), t.type, t.dims);
    } else {
      Input(t.data, AclBytes(t.type, t.dims), t.type, t.dims);
    }
  }
  for (const AclTensor& t : outputs) Output(const_cast<void*>(t.data), AclBytes(t.type, t.dims), t.type, t.dims);
  return *this;
}

AclOp& AclOp::AbsentInput() {
  aclTensorDesc* desc = acl_.CreateTensorDesc(ACL_DT_UNDEFINED, 0, nullptr, ACL_FORMAT_UNDEFINED);
  aclDataBuffer* buf = acl_.CreateDataBuffer(nullptr, 0);
  if (desc == nullptr || buf == nullptr) setup_error_ = "aclCreateTensorDesc/aclCreateDataBuffer returned NULL";
  in_descs_.push_back(desc);
  in_bufs_.push_back(buf);
  return *this;
}

AclOp& AclOp::ConstInput(const void* host, size_t bytes, aclDataType type, const std::vector<int64_t>& dims) {
  // As the CANN EP does (cann_utils.h CANN_CONST_INPUTDESC): the descriptor is marked constant with
  // the host data, and the data buffer points at the same host memory.
  aclTensorDesc* desc = Add(true, host, bytes, type, dims, ACL_FORMAT_ND);
  if (desc != nullptr && acl_.SetTensorConst(desc, const_cast<void*>(host), bytes) != ACL_SUCCESS) {
    setup_error_ = "aclSetTensorConst failed";
  }
  return *this;
}

AclOp& AclOp::Output(void* data, size_t bytes, aclDataType type, const std::vector<int64_t>& dims, aclFormat format) {
  Add(false, data, bytes, type, dims, format);
  return *this;
}

AclOp& AclOp::AttrInt(const char* name, int64_t value) {
  if (attr_ != nullptr && acl_.SetAttrInt(attr_, name, value) != ACL_SUCCESS) {
    setup_error_ = std::string("aclopSetAttrInt(") + name + ") failed";
  }
  return *this;
}

AclOp& AclOp::AttrFloat(const char* name, float value) {
  if (attr_ != nullptr && acl_.SetAttrFloat(attr_, name, value) != ACL_SUCCESS) {
    setup_error_ = std::string("aclopSetAttrFloat(") + name + ") failed";
  }
  return *this;
}

AclOp& AclOp::AttrBool(const char* name, bool value) {
  if (attr_ != nullptr && acl_.SetAttrBool(attr_, name, value ? 1 : 0) != ACL_SUCCESS) {
    setup_error_ = std::string("aclopSetAttrBool(") + name + ") failed";
  }
  return *this;
}

AclOp& AclOp::AttrInts(const char* name, const std::vector<int64_t>& values) {
  if (attr_ != nullptr &&
      acl_.SetAttrListInt(attr_, name, static_cast<int>(values.size()), values.data()) != ACL_SUCCESS) {
    setup_error_ = std::string("aclopSetAttrListInt(") + name + ") failed";
  }
  return *this;
}

AclOp& AclOp::AttrString(const char* name, const char* value) {
  if (attr_ != nullptr && acl_.SetAttrString(attr_, name, value) != ACL_SUCCESS) {
    setup_error_ = std::string("aclopSetAttrString(") + name + ") failed";
  }
  return *this;
}

OrtStatusPtr AclOp::Run(aclrtStream stream) {
  if (!setup_error_.empty()) {
    return MakeError("CANN op " + type_ + ": " + setup_error_, ORT_RUNTIME_EXCEPTION);
  }
  const aclError code =
      acl_.CompileAndExecute(type_.c_str(), static_cast<int>(in_descs_.size()), in_descs_.data(), in_bufs_.data(),
                             static_cast<int>(out_descs_.size()), out_descs_.data(), out_bufs_.data(), attr_,
                             ACL_ENGINE_SYS, ACL_COMPILE_SYS, nullptr, stream);
  if (code != ACL_SUCCESS) return AclError(acl_, "aclopCompileAndExecute(\"" + type_ + "\")", code);
  return nullptr;
}

}  // namespace ortops::cann
