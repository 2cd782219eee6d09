// SoftmaxGrad on the CANN EP: CANN's own single op SoftmaxGrad (hicann/ops-nn activation/softmax_grad:
// grad_x = grad_softmax * softmax - sum(grad_softmax * softmax, axes) * softmax; inputs softmax,
// grad_softmax; attribute axes) on the session's stream, in float32:
//   float32:          SoftmaxGrad(y, dy){axes = [axis]}                                  (1 launch)
//   float16/bfloat16: [Cast dy, y -> float32]; SoftmaxGrad; [Cast -> T]                  (4 launches)
// so the math is float32 with one round-to-nearest-even cast, as the op's definition says. Written
// on the CANN kernel skeleton (cann/sequence_kernel.h). A SoC without the ops fails the session
// naming the SoC and the op (cann/soc.h). Empty tensors launch nothing.
#include <string>
#include "cann/sequence_kernel.h"
#include "cann/soc.h"
#include "common/op_base.h"
#include "ops/softmax_grad/softmax_grad.h"

namespace ortops::softmax_grad {
namespace {

template <typename T>
struct CannKernel : cann::Float32OpKernel<Def, T, CannKernel<T>> {
  using cann::Float32OpKernel<Def, T, CannKernel<T>>::Float32OpKernel;
  static constexpr const char* kCannOp = "SoftmaxGrad";

  // In(0) grad_softmax, In(1) softmax, Out(0) grad_x (an axis out of range fails the run)
  OrtStatusPtr Launch(const cann::SequenceRun& run, const ElementwiseIo& io, const cann::Float32Io<T>& f32) const {
    const auto rank = static_cast<int64_t>(io.shape.size());
    const int64_t axis = this->attributes.axis;
    if (axis < -rank || axis >= rank) {
      return MakeError(std::string(kName) + ": axis " + std::to_string(axis) + " is out of range for inputs of shape " +
                       ShapeText(io.shape));
    }
    return run.Op(kCannOp)
        .Tensors({cann::F32(f32.In(1), io.shape), cann::F32(f32.In(0), io.shape)}, {cann::F32(f32.Out(0), io.shape)})
        .AttrInts("axes", {axis < 0 ? axis + rank : axis})
        .Run(run.stream);
  }
};

}  // namespace

void RegisterCann(OpList& list) { list.AddDeclared<Declaration, CannKernel>(); }

}  // namespace ortops::softmax_grad
