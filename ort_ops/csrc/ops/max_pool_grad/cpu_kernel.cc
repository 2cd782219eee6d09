// MaxPoolGrad on the CPU EP: one (n, c) plane per work item on the session's intra-op pool (on the
// calling thread for small tensors); each plane accumulates in float32, in row-major order of the
// output positions, then is rounded once to T.
#include <cmath>
#include <vector>

#include "common/parallel.h"
#include "ops/max_pool_grad/max_pool_grad.h"

namespace ortops::max_pool_grad {
namespace {

template <typename T>
struct Job {
  const Attributes* a;
  const Run* run;
  void* dx;

  // dX of plane `p`.
  void Plane(size_t p) const {
    const int64_t h = run->h, w = run->w, ho = run->ho, wo = run->wo;
    const auto plane = static_cast<int64_t>(p);
    const void* x = ElementAt<T>(run->x.data, static_cast<size_t>(plane * h * w));
    const void* y = ElementAt<T>(run->y.data, static_cast<size_t>(plane * ho * wo));
    const void* dy = ElementAt<T>(run->dy.data, static_cast<size_t>(plane * ho * wo));
    std::vector<float> acc(static_cast<size_t>(h * w), 0.0f);
    for (int64_t i = 0; i < ho; ++i) {
      const int64_t h0 = i * a->sh - a->top;
      const int64_t r0 = h0 < 0 ? 0 : h0, r1 = h0 + a->kh < h ? h0 + a->kh : h;
      for (int64_t j = 0; j < wo; ++j) {
        const int64_t w0 = j * a->sw - a->left;
        const int64_t c0 = w0 < 0 ? 0 : w0, c1 = w0 + a->kw < w ? w0 + a->kw : w;
        const auto out = static_cast<size_t>(i * wo + j);
        const float m = LoadFloat<T>(y, out);
        const bool nan = std::isnan(m);
        int64_t hit = -1;
        for (int64_t r = r0; r < r1 && hit < 0; ++r) {
          for (int64_t c = c0; c < c1; ++c) {
            const float v = LoadFloat<T>(x, static_cast<size_t>(r * w + c));
            if (v == m || (nan && std::isnan(v))) {
              hit = r * w + c;
              break;
            }
          }
        }
        if (hit >= 0) acc[static_cast<size_t>(hit)] += LoadFloat<T>(dy, out);
      }
    }
    void* dst = ElementAt<T>(dx, static_cast<size_t>(plane * h * w));
    for (size_t k = 0; k < acc.size(); ++k) StoreFloat<T>(dst, k, acc[k]);
  }
};

template <typename T>
struct CpuKernel : CheckedAttributesKernel<Attributes, ReadAttributes> {
  using CheckedAttributesKernel::CheckedAttributesKernel;

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    void* dx = nullptr;  // dX: x's shape
    Run run;
    ORTOPS_RETURN_IF_ERROR(GetInputs(context, attributes_, &run));
    ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, 0, run.x.shape, &dx));
    if (run.x.count == 0) return nullptr;
    Job<T> job{&attributes_, &run, dx};
    return ForEachItem(context, static_cast<size_t>(run.planes), run.planes * run.h * run.w,
                       [&job](size_t p) { job.Plane(p); });
  }
};

}  // namespace

void RegisterCpu(OpList& list) { list.AddDeclared<Declaration, CpuKernel>(); }

}  // namespace ortops::max_pool_grad
