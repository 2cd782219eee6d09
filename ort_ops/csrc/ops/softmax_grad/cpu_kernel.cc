// SoftmaxGrad on the CPU EP: one row (the axis, at one outer and inner position) per work item on
// the session's intra-op pool (on the calling thread for small tensors). In float32, each
// operation rounded: t_k = dy_k * y_k, s = t_0 + t_1 + ... in increasing k, grad_x_k = t_k - s *
// y_k; then one rounding to T (the order CANN's golden writes: docs/ops/SoftmaxGrad.md).
#include <vector>

#include "common/parallel.h"
#include "ops/softmax_grad/softmax_grad.h"

namespace ortops::softmax_grad {
namespace {

template <typename T>
struct CpuKernel : WithAttributes<Def> {
  using WithAttributes<Def>::WithAttributes;

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const {
    Run run;
    ORTOPS_RETURN_IF_ERROR(GetInputs(context, attributes.axis, &run));
    void* dx = nullptr;
    ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, 0, run.y.shape, &dx));
    if (run.y.count == 0) return nullptr;
    const int64_t n = run.n, inner = run.inner;
    auto row = [&](size_t item) {
      const auto r = static_cast<int64_t>(item);
      const int64_t base = (r / inner) * n * inner + r % inner;  // element (outer, 0, inner)
      std::vector<float> t(static_cast<size_t>(n));
      float s = 0.0f;
      for (int64_t k = 0; k < n; ++k) {
        const auto at = static_cast<size_t>(base + k * inner);
        t[static_cast<size_t>(k)] = LoadFloat<T>(run.dy.data, at) * LoadFloat<T>(run.y.data, at);
        s = k == 0 ? t[0] : s + t[static_cast<size_t>(k)];
      }
      for (int64_t k = 0; k < n; ++k) {
        const auto at = static_cast<size_t>(base + k * inner);
        const float u = s * LoadFloat<T>(run.y.data, at);
        StoreFloat<T>(dx, at, t[static_cast<size_t>(k)] - u);
      }
    };
    const size_t rows = static_cast<size_t>(run.outer * run.inner);
    return ForEachItem(context, rows, static_cast<int64_t>(run.y.count), row);
  }
};

}  // namespace

void RegisterCpu(OpList& list) { list.AddDeclared<Declaration, CpuKernel>(); }

}  // namespace ortops::softmax_grad
