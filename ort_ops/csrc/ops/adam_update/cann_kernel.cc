// AdamUpdate on the CANN EP, through CANN's own ops on the session's stream (docs/ops/AdamUpdate.md):
//   cann_scalars given (the trainer's step graph computes it once for every parameter): ApplyAdamW's
//       lr, beta1_power, epsilon = its [lr*k1*sqrt(k2*bc2), beta1^(t-1), eps*sqrt(k2*bc2)] and
//       beta2_power = 0, so that CANN divides by no bias correction of its own for the second
//       moment (float64-exact bias corrections; docs/ops/AdamUpdate.md);
//   else s = Cast(scalars: float64 [3] -> float32 [3]) (lr, beta1^(t-1), beta2^(t-1)) as lr, beta1_power,
//       beta2_power, and epsilon = eps: CANN forms the bias corrections from float32 powers
//   weight_decay != 0: g = Axpy(grad, param, alpha = weight_decay)  (grad + wd * param: L2, Adam's)
//   new_param, new_exp_avg, new_exp_avg_sq = device copies of param, exp_avg, exp_avg_sq, then
//   ApplyAdamW on them in place with weight_decay 0 (PyTorch Adam's epsilon placement; CANN
//   multiplies the beta powers by beta itself and computes in float32, in its own order).
// beta1, beta2, eps and the zero weight decay are constant inputs (no host-to-device copy); the
// float32 scalars and the decayed gradient live in the run's scratch lease (the CANN kernel
// skeleton, cann/sequence_kernel.h). The CANN ops a node launches are checked against the SoC when
// its kernel is created.
#include <vector>

#include "cann/sequence_kernel.h"
#include "cann/soc.h"
#include "common/op_base.h"
#include "ops/adam_update/adam_update.h"

namespace ortops::adam_update {
namespace {

using cann::SequenceRun;

class CannKernel : public Kernel {
 public:
  CannKernel(const OrtKernelInfo* info, const DeclaredOp&, OrtStatusPtr* status) { *status = Init(info); }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    return cann::RunSequence<Io>(*this, context, kName, [&](Io* io) { return PrepareIo(context, io); });
  }

  // RunSequence's step: io is not empty.
  OrtStatusPtr Run(OrtKernelContext* context, const Io& io, SequenceRun& run) const {
    // scratch: float32 scalars | [decayed grad]
    cann::ScratchLayout layout;
    const size_t at_scalars = layout.Add(kScalars * sizeof(float));
    const size_t at_decayed = layout.Add(a_.weight_decay != 0.0f ? io.count * sizeof(float) : 0);
    ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, io.param.memory, layout.size()));
    const char* s32 = static_cast<const char*>(io.cann_scalars.data);
    const bool given = io.cann_scalars.present;
    if (!given) {
      s32 = run.Scratch(at_scalars);
      ORTOPS_RETURN_IF_ERROR(run.Cast(io.scalars.data, ACL_DOUBLE, run.Scratch(at_scalars), ACL_FLOAT, {kScalars}));
    }
    const std::vector<int64_t>& shape = io.param.shape;
    const void* g = io.grad.data;
    if (a_.weight_decay != 0.0f) {
      ORTOPS_RETURN_IF_ERROR(run.Axpy(g, io.param.data, a_.weight_decay, run.Scratch(at_decayed), shape));
      g = run.Scratch(at_decayed);
    }
    const size_t bytes = io.count * sizeof(float);
    ORTOPS_RETURN_IF_ERROR(run.CopyOnDevice(io.new_param, io.param.data, bytes));
    ORTOPS_RETURN_IF_ERROR(run.CopyOnDevice(io.new_exp_avg, io.exp_avg.data, bytes));
    ORTOPS_RETURN_IF_ERROR(run.CopyOnDevice(io.new_exp_avg_sq, io.exp_avg_sq.data, bytes));
    constexpr size_t f = sizeof(float);
    const std::vector<int64_t> one{1};
    cann::AclOp apply = run.Op("ApplyAdamW");
    apply
        .Input(io.new_param, bytes, ACL_FLOAT, shape)       // var
        .Input(io.new_exp_avg, bytes, ACL_FLOAT, shape)     // m
        .Input(io.new_exp_avg_sq, bytes, ACL_FLOAT, shape)  // v
        .Input(s32 + f, f, ACL_FLOAT, one);                 // beta1_power = beta1^(t-1)
    if (given) {
      apply.ConstInput(&kZero, f, ACL_FLOAT, one);  // beta2_power: the bias correction is in lr and epsilon
    } else {
      apply.Input(s32 + 2 * f, f, ACL_FLOAT, one);  // beta2_power = beta2^(t-1)
    }
    apply
        .Input(s32, f, ACL_FLOAT, one)          // lr
        .ConstInput(&kZero, f, ACL_FLOAT, one)  // weight_decay (AdamW's; Adam's L2 is above)
        .ConstInput(&a_.beta1, f, ACL_FLOAT, one)
        .ConstInput(&a_.beta2, f, ACL_FLOAT, one);
    if (given) {
      apply.Input(s32 + 2 * f, f, ACL_FLOAT, one);  // epsilon = eps * sqrt(k2 * bc2)
    } else {
      apply.ConstInput(&a_.eps, f, ACL_FLOAT, one);
    }
    return apply
        .Input(g, bytes, ACL_FLOAT, shape)  // grad
        .AbsentInput()                      // max_grad_norm (amsgrad only)
        .Output(io.new_param, bytes, ACL_FLOAT, shape)
        .Output(io.new_exp_avg, bytes, ACL_FLOAT, shape)
        .Output(io.new_exp_avg_sq, bytes, ACL_FLOAT, shape)
        .AttrBool("amsgrad", false)
        .AttrBool("maximize", false)
        .Run(run.stream);
  }

 private:
  // The attributes and the CANN ops the node will launch on this SoC.
  OrtStatusPtr Init(const OrtKernelInfo* info) {
    ORTOPS_RETURN_IF_ERROR(ReadAttributes(info, &a_));
    const cann::AclApi* acl = nullptr;
    ORTOPS_RETURN_IF_ERROR(cann::KernelAcl(kName, {"Cast", "ApplyAdamW"}, &acl));
    return a_.weight_decay != 0.0f ? cann::RequireOps(*acl, kName, {"Axpy"}) : nullptr;
  }

  static constexpr float kZero = 0.0f;
  Attributes a_;
  mutable cann::ScratchUser scratch_;
};

}  // namespace

void RegisterCann(OpList& list) { list.AddDeclared<Declaration, CannKernel>(); }

}  // namespace ortops::adam_update
