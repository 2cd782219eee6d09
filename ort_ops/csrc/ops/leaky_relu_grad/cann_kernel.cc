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
#include <vector>

#include "cann/sequence_kernel.h"
#include "cann/soc.h"
#include "common/op_base.h"
#include "ops/leaky_relu_grad/leaky_relu_grad.h"

namespace ortops::leaky_relu_grad {
namespace {

using cann::F32;
using cann::Float32Io;
using cann::ScratchLayout;
using cann::SequenceRun;

template <typename T>
struct CannKernel {
  explicit CannKernel(const Def::Attributes& attributes) : slope(attributes.negative_slope) {}
  const float slope;
  mutable cann::ScratchUser scratch;

  OrtStatusPtr Init() {
    const cann::AclApi* acl = nullptr;
    if (Float32Io<T>::kCasts) return cann::KernelAcl(Def::kName, {"LeakyReluGrad", "Cast"}, &acl);
    return cann::KernelAcl(Def::kName, {"LeakyReluGrad"}, &acl);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const { return cann::RunElementwise<Def, T>(*this, context); }

  OrtStatusPtr Run(OrtKernelContext* context, const ElementwiseIo& io, SequenceRun& run) const {
    const auto& shape = io.shape;
    ScratchLayout layout;
    Float32Io<T> f32;
    f32.Elementwise(&layout, io);  // In(0) gradients, In(1) features, Out(0) backprops
    ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch, io.memory, layout.size()));
    ORTOPS_RETURN_IF_ERROR(f32.CastInputs(run));
    ORTOPS_RETURN_IF_ERROR(run.Op("LeakyReluGrad")
                               .Tensors({F32(f32.In(0), shape), F32(f32.In(1), shape)}, {F32(f32.Out(0), shape)})
                               .AttrFloat("negative_slope", slope)
                               .Run(run.stream));
    return f32.CastOutputs();
  }
};

}  // namespace

void RegisterCann(OpList& list) { list.AddDeclared<Declaration, CannKernel>(); }

}  // namespace ortops::leaky_relu_grad
