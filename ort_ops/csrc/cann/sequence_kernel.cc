// The shared parts of the CANN kernels' skeleton (sequence_kernel.h).
#include "cann/sequence_kernel.h"

#include "cann/soc.h"

namespace ortops::cann {

OrtStatusPtr KernelAcl(const char* kernel, std::initializer_list<const char*> op_types, const AclApi** acl) {
  ORTOPS_RETURN_IF_ERROR(AclForKernel(kernel, acl));
  return RequireOps(**acl, kernel, op_types);
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

OrtStatusPtr SequenceRun::Cast(const void* in, aclDataType from, void* out, aclDataType to,
                               const std::vector<int64_t>& dims) const {
  return Op("Cast")
      .Input(in, AclBytes(from, dims), from, dims)
      .Output(out, AclBytes(to, dims), to, dims)
      .AttrInt("dst_type", to)
      .Run(stream);
}

OrtStatusPtr SequenceRun::Axpy(const void* x1, const void* x2, float alpha, void* out,
                               const std::vector<int64_t>& dims) const {
  const size_t bytes = AclBytes(ACL_FLOAT, dims);
  return Op("Axpy")
      .Input(x1, bytes, ACL_FLOAT, dims)
      .Input(x2, bytes, ACL_FLOAT, dims)
      .Output(out, bytes, ACL_FLOAT, dims)
      .AttrFloat("alpha", alpha)
      .Run(stream);
}

}  // namespace ortops::cann
