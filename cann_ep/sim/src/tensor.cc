// Tensor descriptors, data buffers and data type sizes.
#include <cstring>
#include <vector>

#include "internal.h"
#include "tensor.h"

namespace aclsim {

size_t dtype_size(aclDataType t) {
  switch (t) {
    case ACL_BOOL:
    case ACL_INT8:
    case ACL_UINT8: return 1;
    case ACL_FLOAT16:
    case ACL_BF16:
    case ACL_INT16:
    case ACL_UINT16: return 2;
    case ACL_FLOAT:
    case ACL_INT32:
    case ACL_UINT32: return 4;
    case ACL_DOUBLE:
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    case ACL_COMPLEX32: return 4;
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E8M0: return 1;
    default: return 0;
  }
}

std::string shape_str(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace aclsim

extern "C" {

ACL_FUNC_VISIBILITY size_t aclDataTypeSize(aclDataType dataType) {
  size_t n = aclsim::dtype_size(dataType);
  ACLSIM_TRACE("aclDataTypeSize(dataType=%s) = %zu", aclsim::dtype_name(dataType), n);
  return n;
}

ACL_FUNC_VISIBILITY aclTensorDesc* aclCreateTensorDesc(aclDataType dataType, int numDims, const int64_t* dims,
                                                       aclFormat format) {
  aclTensorDesc* d = nullptr;
  if (numDims < 0 || (numDims > 0 && dims == nullptr)) {
    aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclCreateTensorDesc: invalid dims (numDims=%d, dims=%p)", numDims,
                 static_cast<const void*>(dims));
  } else {
    d = new aclTensorDesc();
    d->dtype = dataType;
    d->format = format;
    if (numDims > 0) d->dims.assign(dims, dims + numDims);
  }
  ACLSIM_TRACE("aclCreateTensorDesc(dataType=%s, numDims=%d, dims=%s, format=%d) = %p", aclsim::dtype_name(dataType),
               numDims, d ? aclsim::shape_str(d->dims).c_str() : "?", static_cast<int>(format), static_cast<void*>(d));
  return d;
}

ACL_FUNC_VISIBILITY void aclDestroyTensorDesc(const aclTensorDesc* desc) {
  ACLSIM_TRACE("aclDestroyTensorDesc(desc=%p)", static_cast<const void*>(desc));
  delete desc;
}

ACL_FUNC_VISIBILITY size_t aclGetTensorDescNumDims(const aclTensorDesc* desc) {
  size_t n = desc ? desc->dims.size() : 0;
  ACLSIM_TRACE("aclGetTensorDescNumDims(desc=%p) = %zu", static_cast<const void*>(desc), n);
  return n;
}

ACL_FUNC_VISIBILITY aclError aclGetTensorDescDimV2(const aclTensorDesc* desc, size_t index, int64_t* dimSize) {
  aclError rc = ACL_SUCCESS;
  if (desc == nullptr || dimSize == nullptr) {
    rc = aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclGetTensorDescDimV2: desc or dimSize is NULL");
  } else if (index >= desc->dims.size()) {
    rc = aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclGetTensorDescDimV2: index %zu out of range (%zu dims)", index,
                      desc->dims.size());
  } else {
    *dimSize = desc->dims[index];
  }
  ACLSIM_TRACE("aclGetTensorDescDimV2(desc=%p, index=%zu) = %d", static_cast<const void*>(desc), index, rc);
  return rc;
}

ACL_FUNC_VISIBILITY size_t aclGetTensorDescSize(const aclTensorDesc* desc) {
  size_t n = 0;
  if (desc != nullptr) {
    int64_t numel = 1;
    for (int64_t d : desc->dims) numel = d < 0 ? 0 : numel * d;
    n = static_cast<size_t>(numel) * aclsim::dtype_size(desc->dtype);
  }
  ACLSIM_TRACE("aclGetTensorDescSize(desc=%p) = %zu", static_cast<const void*>(desc), n);
  return n;
}

ACL_FUNC_VISIBILITY aclError aclSetTensorConst(aclTensorDesc* desc, void* dataBuffer, size_t length) {
  aclError rc = ACL_SUCCESS;
  if (desc == nullptr || (dataBuffer == nullptr && length > 0)) {
    rc = aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclSetTensorConst: desc or dataBuffer is NULL");
  } else {
    desc->is_const = true;
    const unsigned char* p = static_cast<const unsigned char*>(dataBuffer);
    desc->const_data.assign(p, p + length);  // copied: the caller's buffer may be temporary
  }
  ACLSIM_TRACE("aclSetTensorConst(desc=%p, dataBuffer=%p, length=%zu) = %d", static_cast<void*>(desc), dataBuffer,
               length, rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclDataBuffer* aclCreateDataBuffer(void* data, size_t size) {
  aclDataBuffer* b = new aclDataBuffer{data, size};
  ACLSIM_TRACE("aclCreateDataBuffer(data=%p, size=%zu) = %p", data, size, static_cast<void*>(b));
  return b;
}

ACL_FUNC_VISIBILITY aclError aclDestroyDataBuffer(const aclDataBuffer* dataBuffer) {
  aclError rc = ACL_SUCCESS;
  if (dataBuffer == nullptr) rc = aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclDestroyDataBuffer: dataBuffer is NULL");
  delete dataBuffer;
  ACLSIM_TRACE("aclDestroyDataBuffer(dataBuffer=%p) = %d", static_cast<const void*>(dataBuffer), rc);
  return rc;
}

ACL_FUNC_VISIBILITY void* aclGetDataBufferAddr(const aclDataBuffer* dataBuffer) {
  void* p = dataBuffer ? dataBuffer->data : nullptr;
  ACLSIM_TRACE("aclGetDataBufferAddr(dataBuffer=%p) = %p", static_cast<const void*>(dataBuffer), p);
  return p;
}

}  // extern "C"
