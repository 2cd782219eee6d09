// SoftmaxGrad on the CANN EP: CANN's own single op SoftmaxGrad (hicann/ops-nn activation/softmax_grad:
// grad_x = grad_softmax * softmax - sum(grad_softmax * softmax, axes) * softmax; inputs softmax,
// grad_softmax; attribute axes) on the session's stream, in float32:
//   float32:          SoftmaxGrad(y, dy){axes = [axis]}                                  (1 launch)
//   float16/bfloat16: [Cast dy, y -> float32]; SoftmaxGrad; [Cast -> T]                  (4 launches)
// so the math is float32 with one round-to-nearest-even cast, as the op's definition says. Written
// on the CANN kernel skeleton (cann/sequence_kernel.h). A SoC without the ops fails the session
// naming the SoC and the op (cann/soc.h). Empty tensors launch nothing.
#include <string>
#include <vector>

#include "cann/sequence_kernel.h"
#include "cann/soc.h"
#include "common/op_base.h"
#include "ops/softmax_grad/softmax_grad.h"

namespace ortops::softmax_grad {
namespace {

using cann::F32;
using cann::Float32Io;
using cann::ScratchLayout;
using cann::SequenceRun;

template <typename T>
struct CannKernel {
  explicit CannKernel(const Def::Attributes& attributes) : axis(attributes.axis) {}
  const int64_t axis;
  mutable cann::ScratchUser scratch;

  OrtStatusPtr Init() {
    const cann::AclApi* acl = nullptr;
    if (Float32Io<T>::kCasts) return cann::KernelAcl(Def::kName, {"SoftmaxGrad", "Cast"}, &acl);
    return cann::KernelAcl(Def::kName, {"SoftmaxGrad"}, &acl);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const { return cann::RunElementwise<Def, T>(*this, context); }

  OrtStatusPtr Run(OrtKernelContext* context, const ElementwiseIo& io, SequenceRun& run) const {
    const auto& shape = io.shape;
    const auto rank = static_cast<int64_t>(shape.size());
    if (axis < -rank || axis >= rank) {
      return MakeError(std::string(kName) + ": axis " + std::to_string(axis) + " is out of range for inputs of shape " +
                       ShapeText(shape));
    }
    ScratchLayout layout;
    Float32Io<T> f32;
    f32.Elementwise(&layout, io);  // In(0) grad_softmax, In(1) softmax, Out(0) grad_x
    ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch, io.memory, layout.size()));
    ORTOPS_RETURN_IF_ERROR(f32.CastInputs(run));
    ORTOPS_RETURN_IF_ERROR(run.Op("SoftmaxGrad")
                               .Tensors({F32(f32.In(1), shape), F32(f32.In(0), shape)}, {F32(f32.Out(0), shape)})
                               .AttrInts("axes", {axis < 0 ? axis + rank : axis})
                               .Run(run.stream));
    return f32.CastOutputs();
  }
};

}  // namespace

void RegisterCann(OpList& list) { list.AddDeclared<Declaration, CannKernel>(); }

}  // namespace ortops::softmax_grad
