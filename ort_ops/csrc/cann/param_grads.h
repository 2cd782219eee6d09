// The dscale / dbias outputs of a normalisation gradient launched as one CANN op
// (BatchNormGradV3, LayerNormGradV3: the op writes all three of its outputs).
#pragma once

#include <cstddef>
#include <string>

#include "cann/acl_op.h"
#include "cann/sequence_kernel.h"
#include "common/norm_grad.h"

namespace ortops::cann {

// dscale and dbias (`bytes` each) of sums over no element: zeros (aclrtMemsetAsync), in those the
// node produces; errors name `op`.
inline OrtStatusPtr ZeroParamGrads(const SequenceRun& cann, const char* op, const NormGradRun& run, size_t bytes) {
  for (void* out : {run.dscale, run.dbias}) {
    if (out == nullptr) continue;
    const aclError rc = cann.acl->MemsetAsync(out, bytes, 0, bytes, cann.stream);
    if (rc != ACL_SUCCESS) return AclError(*cann.acl, std::string(op) + ": aclrtMemsetAsync", rc);
  }
  return nullptr;
}

// Where the CANN op writes dscale and dbias (`bytes` each): the node's outputs, or scratch for
// those the node does not produce.
class ParamGradTargets {
 public:
  // Lays out the scratch in `layout` (before the run's lease).
  ParamGradTargets(const NormGradRun& run, size_t bytes, ScratchLayout* layout)
      : run_(run),
        dscale_at_(layout->Add(run.dscale != nullptr ? 0 : bytes)),
        dbias_at_(layout->Add(run.dbias != nullptr ? 0 : bytes)) {}

  // After the lease of `cann`: the buffers.
  void* DScale(const SequenceRun& cann) const {
    return run_.dscale != nullptr ? run_.dscale : cann.Scratch(dscale_at_);
  }
  void* DBias(const SequenceRun& cann) const { return run_.dbias != nullptr ? run_.dbias : cann.Scratch(dbias_at_); }

 private:
  const NormGradRun& run_;
  size_t dscale_at_, dbias_at_;
};

}  // namespace ortops::cann
