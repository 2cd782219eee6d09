// MseLossAndGrad on the CPU EP, in float32 (T loads exactly), each operation rounded: d_i =
// prediction_i - target_i; dprediction_i = (d_i * cof) * dloss, rounded once to T; loss = d_0 *
// d_0 + d_1 * d_1 + ... added in element order (the simulated CANN MseLoss's order), times
// float32(1 / N) for "mean" (CANN's golden: the sum times 1 / N; N = 0 gives 0 * inf = NaN), rounded
// once to T.
#include "ops/mse_loss_and_grad/mse_loss_and_grad.h"

namespace ortops::mse_loss_and_grad {
namespace {

template <typename T>
struct CpuKernel : CheckedAttributesKernel<Attributes, ReadAttributes> {
  using CheckedAttributesKernel::CheckedAttributesKernel;

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    Run run;
    ORTOPS_RETURN_IF_ERROR(Prepare(context, &run));
    const size_t n = run.prediction.count;
    const float cof = GradientScale(attributes_.mean, n);
    const float dloss = LoadFloat<T>(run.dloss.data, 0);
    float total = 0.0f;
    for (size_t i = 0; i < n; ++i) {
      const float d = LoadFloat<T>(run.prediction.data, i) - LoadFloat<T>(run.target.data, i);
      const float square = d * d;
      total = i == 0 ? square : total + square;
      StoreFloat<T>(run.dprediction, i, (d * cof) * dloss);
    }
    if (attributes_.mean) total *= static_cast<float>(1.0 / static_cast<double>(n));
    StoreFloat<T>(run.loss, 0, total);
    return nullptr;
  }
};

}  // namespace

void RegisterCpu(OpList& list) { list.AddDeclared<Declaration, CpuKernel>(); }

}  // namespace ortops::mse_loss_and_grad
