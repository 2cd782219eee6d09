// MseLossAndGrad on the CANN EP: CANN's own MseLoss and MseLossGrad (hicann/ops-nn loss/mse_loss,
// loss/mse_loss_grad: READMEs, op_host/arch35 tilings, op_kernel/arch35/mse_loss_grad_dag.h) on
// the session's stream, two launches, in float32 (the Float32Io cast-wrap for float16/bfloat16:
// casts of the three inputs in and of the two outputs back, one rounding):
//   loss        = MseLoss(prediction, target; reduction)          [1]
//   dprediction = MseLossGrad(prediction, target, dloss [1]; reduction)
// MseLossGrad computes ((prediction - target) * cof) * dout with cof = float32(2 / N) for "mean",
// 2 for "sum" (its tiling; the dag's Sub, Muls, Mul): the CPU kernel's order, bit for bit; its dout
// of one element takes the scalar dag. MseLoss's sum is the NPU's (the simulator's: element order,
// the CPU kernel's). A SoC without the ops fails the session naming the SoC and the op (cann/soc.h).
// An empty prediction is refused (CANN's ops take no empty tensors; MseLossGrad's "mean" tiling
// refuses it by name), as by the other fused loss.
#include <string>
#include <vector>

#include "cann/sequence_kernel.h"
#include "cann/soc.h"
#include "ops/mse_loss_and_grad/mse_loss_and_grad.h"

namespace ortops::mse_loss_and_grad {
namespace {

using cann::F32;
using cann::Float32Io;
using cann::ScratchLayout;
using cann::SequenceRun;

template <typename T>
class CannKernel : public CheckedAttributesKernel<Attributes, ReadAttributes> {
 public:
  CannKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : CheckedAttributesKernel(info, op, status) {
    if (*status != nullptr) return;
    const cann::AclApi* acl = nullptr;
    if (Float32Io<T>::kCasts) {
      *status = cann::KernelAcl(kName, {"MseLoss", "MseLossGrad", "Cast"}, &acl);
    } else {
      *status = cann::KernelAcl(kName, {"MseLoss", "MseLossGrad"}, &acl);
    }
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    Run run;
    ORTOPS_RETURN_IF_ERROR(Prepare(context, &run));
    if (run.prediction.count == 0) {
      return MakeError(std::string(kName) + " on CANN: prediction shape " + ShapeText(run.prediction.shape) +
                           " is empty; CANN's ops take no empty tensors (the CPU kernel does)",
                       ORT_NOT_IMPLEMENTED);
    }
    SequenceRun cann;
    ORTOPS_RETURN_IF_ERROR(SequenceRun::Begin(context, kName, &cann));
    const std::vector<int64_t>& shape = run.prediction.shape;
    const std::vector<int64_t> one{1};
    ScratchLayout layout;
    Float32Io<T> f32;
    const size_t x = f32.Input(&layout, run.prediction.data, shape), y = f32.Input(&layout, run.target.data, shape),
                 d = f32.Input(&layout, run.dloss.data, one);
    const size_t out_loss = f32.Output(&layout, run.loss, one), out_dx = f32.Output(&layout, run.dprediction, shape);
    ORTOPS_RETURN_IF_ERROR(cann.Lease(context, scratch_, run.prediction.memory, layout.size()));
    ORTOPS_RETURN_IF_ERROR(f32.CastInputs(cann));
    const char* reduction = attributes_.mean ? "mean" : "sum";
    ORTOPS_RETURN_IF_ERROR(cann.Op("MseLoss")
                               .Tensors({F32(f32.In(x), shape), F32(f32.In(y), shape)}, {F32(f32.Out(out_loss), one)})
                               .AttrString("reduction", reduction)
                               .Run(cann.stream));
    ORTOPS_RETURN_IF_ERROR(
        cann.Op("MseLossGrad")
            .Tensors({F32(f32.In(x), shape), F32(f32.In(y), shape), F32(f32.In(d), one)}, {F32(f32.Out(out_dx), shape)})
            .AttrString("reduction", reduction)
            .Run(cann.stream));
    return f32.CastOutputs();
  }

 private:
  mutable cann::ScratchUser scratch_;
};

}  // namespace

void RegisterCann(OpList& list) { list.AddDeclared<Declaration, CannKernel>(); }

}  // namespace ortops::mse_loss_and_grad
