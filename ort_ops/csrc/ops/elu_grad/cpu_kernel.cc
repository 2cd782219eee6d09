// EluGrad on the CPU EP, written on the CPU elementwise skeleton (common/elementwise.h): validates,
// then runs this CPU's loops (cpu_loops.h: AVX2 + F16C or portable, chosen at run time) over
// chunks on the session's intra-op thread pool (single-threaded for small tensors).
#include "common/element_type.h"
#include "common/elementwise.h"
#include "common/op_base.h"
#include "ops/elu_grad/cpu_loops.h"
#include "ops/elu_grad/elu_grad.h"

namespace ortops::elu_grad {
namespace {

// Outputs at least this many bytes are written with non-temporal stores.
constexpr size_t kStreamingMinBytes = size_t{16} << 20;

template <typename T>
CpuLoop LoopFor(const CpuLoops& loops);
template <>
CpuLoop LoopFor<Float32>(const CpuLoops& loops) {
  return loops.f32;
}
template <>
CpuLoop LoopFor<Float16>(const CpuLoops& loops) {
  return loops.f16;
}
template <>
CpuLoop LoopFor<BFloat16>(const CpuLoops& loops) {
  return loops.bf16;
}

template <typename T>
struct CpuKernel : WithAttributes<Def> {
  using WithAttributes<Def>::WithAttributes;

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const {
    ElementwiseIo io;
    ORTOPS_RETURN_IF_ERROR((PrepareDeclared<Def, T>(context, &io)));
    const CpuLoop loop = LoopFor<T>(SelectLoops());
    const bool streaming = io.count * sizeof(typename T::Storage) >= kStreamingMinBytes;
    const float a = attributes.alpha;
    return ForEachChunk<T>(
        context, io, [loop, a, streaming](const ElementwiseChunk& c) { loop(c.x[0], c.x[1], c.y, c.n, a, streaming); });
  }
};

}  // namespace

void RegisterCpu(OpList& list) { list.AddDeclared<Declaration, CpuKernel>(); }

}  // namespace ortops::elu_grad
