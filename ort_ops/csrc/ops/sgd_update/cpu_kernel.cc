// SGDUpdate on the CPU EP: one pass over the parameter, each step one float32 IEEE operation in
// the order of the ONNX update graph it replaces (ort_ops/training/optim.py), chunked over the
// session's intra-op thread pool for large parameters. Buffers may sit at any address (IOBinding):
// elements are accessed through memcpy.
#include <cstring>

#include "common/element_type.h"
#include "common/op_base.h"
#include "common/parallel.h"
#include "ops/sgd_update/sgd_update.h"

namespace ortops::sgd_update {
namespace {

constexpr size_t kParallelMinElements = size_t{1} << 16;
constexpr size_t kChunkElements = size_t{1} << 14;

struct Job {
  const void* param;
  const void* grad;
  const void* buffer;  // momentum != 0 only
  void* new_param;
  void* new_buffer;
  float neg_lr, step_momentum, grad_scale;  // from the scalars
  Attributes a;

  void Run(size_t begin, size_t end) const {
    const bool decay = a.weight_decay != 0.0f;
    const bool momentum = a.momentum != 0.0f;
    for (size_t i = begin; i < end; ++i) {
      const float p = LoadFloat<Float32>(param, i);
      float g = LoadFloat<Float32>(grad, i);
      if (decay) g = g + p * a.weight_decay;
      if (momentum) {
        const float b = LoadFloat<Float32>(buffer, i) * step_momentum + g * grad_scale;
        StoreFloat<Float32>(new_buffer, i, b);
        g = a.nesterov ? g + b * a.momentum : b;
      }
      StoreFloat<Float32>(new_param, i, p + g * neg_lr);
    }
  }
};

struct CpuKernel : CheckedAttributesKernel<Attributes, ReadAttributes> {
  using CheckedAttributesKernel::CheckedAttributesKernel;

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    return RunPrepared<Io>(*this, context, [&](Io* io) { return PrepareIo(context, attributes_, io); });
  }

  // RunPrepared's step: io is not empty.
  OrtStatusPtr Run(OrtKernelContext* context, const Io& io) const {
    float s[kScalars];
    std::memcpy(s, io.scalars.data, sizeof s);
    const Job job{io.param.data, io.grad.data, io.buffer.data, io.new_param, io.new_buffer,
                  -s[0],         s[1],         s[2],           attributes_};
    return RunInChunks(context, io.count, kParallelMinElements, kChunkElements, job);
  }
};

}  // namespace

void RegisterCpu(OpList& list) { list.AddDeclared<Declaration, CpuKernel>(); }

}  // namespace ortops::sgd_update
