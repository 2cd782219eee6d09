// LayerNormGrad on the CANN EP: CANN's own single op LayerNormGradV3 (hicann/ops-nn
// norm/layer_norm_grad_v3: inputs dy, x, rstd, mean, gamma; outputs pd_x, pd_gamma, pd_beta; its
// README's formula is this op's) on the session's stream, one launch for every T: dy, x, gamma and
// the three outputs in T, rstd and mean in float32 (the op_host def's rows dy = gamma = pd_gamma = T,
// rstd = mean = float32). The normalised dims are gamma's; output_mask stays {true, true, true}:
// an output the node does not produce is written to scratch. Written on the CANN kernel skeleton
// (cann/sequence_kernel.h). A SoC without the op fails the session naming the SoC and the op
// (cann/soc.h). An empty x launches nothing: dscale and dbias of zero rows are zeros
// (aclrtMemsetAsync).
#include <string>
#include <vector>

#include "cann/param_grads.h"
#include "cann/sequence_kernel.h"
#include "cann/soc.h"
#include "common/op_base.h"
#include "ops/layer_norm_grad/layer_norm_grad.h"

namespace ortops::layer_norm_grad {
namespace {

using cann::Device;
using cann::F32;
using cann::ScratchLayout;
using cann::SequenceRun;

template <typename T>
struct CannKernel : WithAttributes<Def> {
  using WithAttributes<Def>::WithAttributes;
  mutable cann::ScratchUser scratch;

  OrtStatusPtr Init() {
    const cann::AclApi* acl = nullptr;
    return cann::KernelAcl(Def::kName, {"LayerNormGradV3"}, &acl);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const {
    Run run;
    ORTOPS_RETURN_IF_ERROR(Prepare(context, attributes.axis, &run));
    if (run.m == 0) return nullptr;  // every output is empty
    SequenceRun cann;
    ORTOPS_RETURN_IF_ERROR(SequenceRun::Begin(context, kName, &cann));
    constexpr aclDataType type = cann::kAclType<T>;
    const size_t param_bytes = cann::AclBytes(type, run.scale_shape);
    if (run.rows == 0) return cann::ZeroParamGrads(cann, kName, run, param_bytes);  // sums over no rows
    ScratchLayout layout;
    const cann::ParamGradTargets grads(run, param_bytes, &layout);  // the outputs the node does not produce: scratch
    ORTOPS_RETURN_IF_ERROR(cann.Lease(context, scratch, run.x.memory, layout.size()));
    const std::vector<int64_t>& shape = run.x.shape;
    return cann.Op("LayerNormGradV3")
        .Tensors({Device(run.dy.data, type, shape), Device(run.x.data, type, shape), F32(run.rstd.data, run.rstd.shape),
                  F32(run.mean.data, run.mean.shape), Device(run.scale.data, type, run.scale_shape)},
                 {Device(run.dx, type, shape), Device(grads.DScale(cann), type, run.scale_shape),
                  Device(grads.DBias(cann), type, run.scale_shape)})
        .Run(cann.stream);
  }
};

}  // namespace

void RegisterCann(OpList& list) { list.AddDeclared<Declaration, CannKernel>(); }

}  // namespace ortops::layer_norm_grad
