// LeakyReluGrad on the CANN EP: CANN's own single op LeakyReluGrad (hicann/ops-nn
// activation/leaky_relu_grad: backprops = features > 0 ? gradients : gradients * negative_slope)
// on the session's stream, in float32:
//   float32:          LeakyReluGrad(g, f){negative_slope}                               (1 launch)
//   float16/bfloat16: [Cast g, f -> float32]; LeakyReluGrad; [Cast -> T]                (4 launches)
// so the math is float32 with one round-to-nearest-even cast, as the op's definition says (CANN's
// own float16/bfloat16 kernels need not compute in float32). Written on the CANN kernel skeleton
// (cann/sequence_kernel.h): the casts are its Float32Io, the float32 copies live in the run's
// scratch lease. A SoC without the ops fails the session naming the SoC and the op (cann/soc.h).
// Empty tensors launch nothing.
#include "cann/sequence_kernel.h"
#include "cann/soc.h"
#include "common/op_base.h"
#include "ops/leaky_relu_grad/leaky_relu_grad.h"

namespace ortops::leaky_relu_grad {
namespace {

template <typename T>
struct CannKernel : cann::Float32OpKernel<Def, T, CannKernel<T>> {
  using cann::Float32OpKernel<Def, T, CannKernel<T>>::Float32OpKernel;
  static constexpr const char* kCannOp = "LeakyReluGrad";

  // In(0) gradients, In(1) features, Out(0) backprops
  OrtStatusPtr Launch(const cann::SequenceRun& run, const ElementwiseIo& io, const cann::Float32Io<T>& f32) const {
    return run.Op(kCannOp)
        .Tensors({cann::F32(f32.In(0), io.shape), cann::F32(f32.In(1), io.shape)}, {cann::F32(f32.Out(0), io.shape)})
        .AttrFloat("negative_slope", this->attributes.negative_slope)
        .Run(run.stream);
  }
};

}  // namespace

void RegisterCann(OpList& list) { list.AddDeclared<Declaration, CannKernel>(); }

}  // namespace ortops::leaky_relu_grad
