// EluGrad on the CPU EP: validates, then runs the vector loops over cache-sized chunks on the
// session's intra-op thread pool (single-threaded for small tensors).
#include <algorithm>

#include "common/element_type.h"
#include "common/op_base.h"
#include "ops/elu_grad/cpu_loops.h"
#include "ops/elu_grad/elu_grad.h"

namespace ortops::elu_grad {
namespace {

// Tensors below this many elements run on the calling thread: the pool costs more than it saves.
constexpr size_t kParallelMinElements = size_t{1} << 16;
// Elements per parallel work item (multiple of 64 so chunks keep the output's alignment).
constexpr size_t kChunkElements = size_t{1} << 15;
// Outputs at least this many bytes are written with non-temporal stores.
constexpr size_t kStreamingMinBytes = size_t{16} << 20;

template <typename T>
EluGradLoop LoopFor(const EluGradLoops& loops);
template <>
EluGradLoop LoopFor<Float32>(const EluGradLoops& loops) {
  return loops.f32;
}
template <>
EluGradLoop LoopFor<Float16>(const EluGradLoops& loops) {
  return loops.f16;
}
template <>
EluGradLoop LoopFor<BFloat16>(const EluGradLoops& loops) {
  return loops.bf16;
}

template <typename T>
struct Job {
  EluGradLoop loop;
  const void* grads;
  const void* activations;
  void* y;
  size_t count;
  float alpha;
  bool streaming;

  static void RunChunk(void* self, size_t index) {
    const Job& job = *static_cast<const Job*>(self);
    const size_t begin = index * kChunkElements;
    const size_t n = std::min(kChunkElements, job.count - begin);
    job.loop(ElementAt<T>(job.grads, begin), ElementAt<T>(job.activations, begin), ElementAt<T>(job.y, begin), n,
             job.alpha, job.streaming);
  }
};

template <typename T>
struct CpuKernel {
  explicit CpuKernel(const Def::Attributes& attributes) : alpha(attributes.alpha) {}
  OrtStatusPtr Init() { return nullptr; }
  float alpha;

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const {
    ElementwiseIo io;
    ORTOPS_RETURN_IF_ERROR(PrepareElementwise(context, Def::kName, Def::InputNames(), T::kOnnxType, &io));
    if (io.count == 0) return nullptr;
    Job<T> job{LoopFor<T>(SelectLoops()),
               io.inputs[0],
               io.inputs[1],
               io.output,
               io.count,
               alpha,
               io.count * sizeof(typename T::Storage) >= kStreamingMinBytes};
    if (io.count < kParallelMinElements) {
      job.loop(job.grads, job.activations, job.y, job.count, alpha, job.streaming);
      return nullptr;
    }
    const size_t chunks = (io.count + kChunkElements - 1) / kChunkElements;
    return Api().KernelContext_ParallelFor(context, &Job<T>::RunChunk, chunks, 0, &job);
  }
};

}  // namespace

void RegisterCpu(OpList& list) { list.AddDeclared<Declaration, CpuKernel>(); }

}  // namespace ortops::elu_grad
