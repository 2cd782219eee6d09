// BatchNormGrad on the CANN EP: CANN's own single op BatchNormGradV3 (hicann/ops-nn
// norm/batch_norm_grad_v3: op_graph/batch_norm_grad_v3_proto.h, op_host/batch_norm_grad_v3_def.cpp)
// with is_training true, on the session's stream: dy, x, weight and the three outputs in T, x and
// dy viewed as NCHW [N, C, L, 1] (L = prod(spatial): the def's formats are NCHW / NCDHW only),
// weight, the statistics and dweight / dbias [C]. running_mean / running_var, which training does
// not read, are given the statistics (float32: a row of the def for every T).
// What save_rstd holds depends on the kernel CANN runs there: the Atlas A2/A3 kernel (ascend910b,
// ascend910_93; op_kernel/batch_norm_grad_v3_base_common.h) reads a variance and adds epsilon
// itself: one launch with var as it is. The Ascend 950 kernel (op_kernel/arch35) reads
// 1 / sqrt(var + epsilon): Adds, Sqrt and Reciprocal make it in scratch first (four launches).
// An output the node does not produce is written to scratch. A SoC without the ops fails the
// session naming the SoC and the op (cann/soc.h). An x without elements launches nothing: dscale
// and dbias of no element are zeros (aclrtMemsetAsync).
#include <string>
#include <vector>

#include "cann/param_grads.h"
#include "cann/sequence_kernel.h"
#include "cann/soc.h"
#include "common/op_base.h"
#include "ops/batch_norm_grad/batch_norm_grad.h"

namespace ortops::batch_norm_grad {
namespace {

using cann::F32;
using cann::ScratchLayout;
using cann::SequenceRun;

template <typename T>
struct CannKernel : WithAttributes<Def> {
  using WithAttributes<Def>::WithAttributes;
  mutable cann::ScratchUser scratch;
  bool rstd_input = false;  // BatchNormGradV3's save_rstd is 1 / sqrt(var + epsilon) (the 950 kernel)

  OrtStatusPtr Init() {
    const cann::AclApi* acl = nullptr;
    ORTOPS_RETURN_IF_ERROR(cann::KernelAcl(Def::kName, {"BatchNormGradV3"}, &acl));
    rstd_input = std::string(cann::SocFamily(cann::SocName(*acl))) == "ascend950";
    return rstd_input ? cann::RequireOps(*acl, Def::kName, {"Adds", "Sqrt", "Reciprocal"}) : nullptr;
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const {
    Run run;
    ORTOPS_RETURN_IF_ERROR(Prepare(context, &run));
    if (run.c == 0) return nullptr;  // every output is empty
    SequenceRun cann;
    ORTOPS_RETURN_IF_ERROR(SequenceRun::Begin(context, kName, &cann));
    constexpr aclDataType type = cann::kAclType<T>;
    const std::vector<int64_t> channels{run.c};
    const size_t param_bytes = cann::AclBytes(type, channels);
    if (run.n * run.l == 0) return cann::ZeroParamGrads(cann, kName, run, param_bytes);  // sums over no element
    ScratchLayout layout;
    const size_t stat_bytes = cann::AclBytes(ACL_FLOAT, channels);
    const cann::ParamGradTargets grads(run, param_bytes, &layout);
    const size_t rstd_at = layout.Add(rstd_input ? stat_bytes : 0);
    ORTOPS_RETURN_IF_ERROR(cann.Lease(context, scratch, run.x.memory, layout.size()));
    const void* save_rstd = run.var.data;
    if (rstd_input) {  // rstd = 1 / sqrt(var + epsilon), in place in scratch
      void* rstd = cann.Scratch(rstd_at);
      ORTOPS_RETURN_IF_ERROR(cann.Op("Adds")
                                 .Tensors({F32(run.var.data, channels)}, {F32(rstd, channels)})
                                 .AttrFloat("value", attributes.epsilon)
                                 .Run(cann.stream));
      ORTOPS_RETURN_IF_ERROR(cann.Launch("Sqrt", {F32(rstd, channels)}, {F32(rstd, channels)}));
      ORTOPS_RETURN_IF_ERROR(cann.Launch("Reciprocal", {F32(rstd, channels)}, {F32(rstd, channels)}));
      save_rstd = rstd;
    }
    const std::vector<int64_t> nchw{run.n, run.c, run.l, 1};
    const size_t x_bytes = cann::AclBytes(type, nchw);
    return cann.Op("BatchNormGradV3")
        .Input(run.dy.data, x_bytes, type, nchw, ACL_FORMAT_NCHW)
        .Input(run.x.data, x_bytes, type, nchw, ACL_FORMAT_NCHW)
        .Input(run.scale.data, param_bytes, type, channels)
        .Input(run.mean.data, stat_bytes, ACL_FLOAT, channels)
        .Input(run.var.data, stat_bytes, ACL_FLOAT, channels)
        .Input(run.mean.data, stat_bytes, ACL_FLOAT, channels)
        .Input(save_rstd, stat_bytes, ACL_FLOAT, channels)
        .Output(run.dx, x_bytes, type, nchw, ACL_FORMAT_NCHW)
        .Output(grads.DScale(cann), param_bytes, type, channels)
        .Output(grads.DBias(cann), param_bytes, type, channels)
        .AttrBool("is_training", true)
        .AttrFloat("epsilon", attributes.epsilon)
        .Run(cann.stream);
  }
};

}  // namespace

void RegisterCann(OpList& list) { list.AddDeclared<Declaration, CannKernel>(); }

}  // namespace ortops::batch_norm_grad
