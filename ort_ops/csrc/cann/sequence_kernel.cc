// The shared parts of the CANN kernels' skeleton (sequence_kernel.h).
#include "cann/sequence_kernel.h"

#include "cann/soc.h"

namespace ortops::cann {

OrtStatusPtr KernelAcl(const char* kernel, std::initializer_list<const char*> op_types, const AclApi** acl) {
  ORTOPS_RETURN_IF_ERROR(AclForKernel(kernel, acl));
  return RequireOps(**acl, kernel, op_types);
}

OrtStatusPtr SequenceRun::Cast(const void* in, aclDataType from, void* out, aclDataType to,
                               const std::vector<int64_t>& dims) const {
  return Op("Cast").Tensors({Device(in, from, dims)}, {Device(out, to, dims)}).AttrInt("dst_type", to).Run(stream);
}

OrtStatusPtr SequenceRun::Axpy(const void* x1, const void* x2, float alpha, void* out,
                               const std::vector<int64_t>& dims) const {
  return Op("Axpy").Tensors({F32(x1, dims), F32(x2, dims)}, {F32(out, dims)}).AttrFloat("alpha", alpha).Run(stream);
}

}  // namespace ortops::cann
