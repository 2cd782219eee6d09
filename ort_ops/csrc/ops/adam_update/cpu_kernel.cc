// AdamUpdate on the CPU EP: the step scalars in float64 once per run, then one pass over the
// parameter, each step one float32 IEEE operation in the order of the ONNX update graph it replaces
// (ort_ops/training/optim.py), chunked over the session's intra-op thread pool for large parameters.
// Buffers may sit at any address (IOBinding): elements are accessed through memcpy.
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>

#include "common/element_type.h"
#include "common/op_base.h"
#include "common/parallel.h"
#include "ops/adam_update/adam_update.h"

namespace ortops::adam_update {
namespace {

constexpr size_t kParallelMinElements = size_t{1} << 16;
constexpr size_t kChunkElements = size_t{1} << 14;

struct Job {
  const void *param, *grad, *exp_avg, *exp_avg_sq;
  void *new_param, *new_exp_avg, *new_exp_avg_sq;
  float weight_decay, one_minus_beta1, beta2, one_minus_beta2, eps;
  float step, bc2_sqrt;  // -lr / (1 - beta1^t) and sqrt(1 - beta2^t), rounded from float64

  void Run(size_t begin, size_t end) const {
    const bool decay = weight_decay != 0.0f;
    for (size_t i = begin; i < end; ++i) {
      const float p = LoadFloat<Float32>(param, i);
      float g = LoadFloat<Float32>(grad, i);
      if (decay) g = g + p * weight_decay;
      const float m0 = LoadFloat<Float32>(exp_avg, i);
      const float m = m0 + (g - m0) * one_minus_beta1;
      const float v = LoadFloat<Float32>(exp_avg_sq, i) * beta2 + (g * one_minus_beta2) * g;
      const float denom = std::sqrt(v) / bc2_sqrt + eps;
      StoreFloat<Float32>(new_exp_avg, i, m);
      StoreFloat<Float32>(new_exp_avg_sq, i, v);
      StoreFloat<Float32>(new_param, i, p + (m / denom) * step);
    }
  }
};

// The shortest text that reads back as `value`.
std::string Text(double value) {
  char text[64];
  return std::string(text, std::to_chars(text, text + sizeof text, value).ptr);
}

// cann_scalars must be [lr*k1*sqrt(k2*bc2), beta1^(t-1), eps*sqrt(k2*bc2)] within kCannScalarsRtol
// relative to at least kCannScalarsFloor (NaN where that is NaN), as the reference's check_cann_scalars.
OrtStatusPtr CheckCannScalars(const double* s, const void* given, const Attributes& a) {
  float f[kScalars];
  std::memcpy(f, given, sizeof f);
  const Compensations k = CompensationsOf(a);
  const double root = std::sqrt(k.k2 * (1.0 - s[2] * a.beta2_d));
  const double want[kScalars] = {s[0] * k.k1 * root, s[1], static_cast<double>(a.eps) * root};
  bool close = true;
  std::string wanted, got;
  for (int64_t i = 0; i < kScalars; ++i) {
    const double g = f[i];
    close = close && (std::fabs(g - want[i]) <= kCannScalarsRtol * std::fmax(std::fabs(want[i]), kCannScalarsFloor) ||
                      (std::isnan(g) && std::isnan(want[i])));
    wanted += (i ? ", " : "") + Text(want[i]);
    got += (i ? ", " : "") + Text(g);
  }
  if (close) return nullptr;
  return MakeError(std::string(kName) + ": cann_scalars [" + got +
                   "] is not [lr*k1*sqrt(k2*bc2), beta1^(t-1), eps*sqrt(k2*bc2)] = [" + wanted +
                   "] (within relative 2^-21)");
}

struct CpuKernel : CheckedAttributesKernel<Attributes, ReadAttributes> {
  using CheckedAttributesKernel::CheckedAttributesKernel;

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    return RunPrepared<Io>(*this, context, [context](Io* io) { return PrepareIo(context, io); });
  }

  // RunPrepared's step: io is not empty.
  OrtStatusPtr Run(OrtKernelContext* context, const Io& io) const {
    double s[kScalars];
    std::memcpy(s, io.scalars.data, sizeof s);
    if (io.cann_scalars.present) ORTOPS_RETURN_IF_ERROR(CheckCannScalars(s, io.cann_scalars.data, attributes_));
    const double bc1 = 1.0 - s[1] * attributes_.beta1_d;
    const double bc2 = 1.0 - s[2] * attributes_.beta2_d;
    const Job job{io.param.data,
                  io.grad.data,
                  io.exp_avg.data,
                  io.exp_avg_sq.data,
                  io.new_param,
                  io.new_exp_avg,
                  io.new_exp_avg_sq,
                  attributes_.weight_decay,
                  static_cast<float>(1.0 - attributes_.beta1_d),
                  attributes_.beta2,
                  static_cast<float>(1.0 - attributes_.beta2_d),
                  attributes_.eps,
                  static_cast<float>(-(s[0] / bc1)),
                  static_cast<float>(std::sqrt(bc2))};
    return RunInChunks(context, io.count, kParallelMinElements, kChunkElements, job);
  }
};

}  // namespace

void RegisterCpu(OpList& list) { list.AddDeclared<Declaration, CpuKernel>(); }

}  // namespace ortops::adam_update
