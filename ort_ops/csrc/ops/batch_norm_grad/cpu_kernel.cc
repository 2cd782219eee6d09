// BatchNormGrad on the CPU EP, one channel per work item on the session's intra-op pool (on the
// calling thread for small tensors), in float32 with each operation rounded, then one rounding to T;
// the order of CANN BatchNormGradV3's Atlas A2/A3 training kernel (docs/ops/BatchNormGrad.md):
//   std = sqrt(var + epsilon); over the channel's elements in increasing (n, l) order
//   db = dy_0 + dy_1 + ..., s = (x_0 - mean) * dy_0 + ...;  dw = s / std,
//   k = ((s / std) / std) * (1 / M), a = db * (1 / M),
//   dx_i = (((dy_i - a) - (x_i - mean) * k) / std) * scale;  dscale = dw, dbias = db.
#include <cmath>

#include "common/parallel.h"
#include "ops/batch_norm_grad/batch_norm_grad.h"

namespace ortops::batch_norm_grad {
namespace {

template <typename T>
struct CpuKernel : WithAttributes<Def> {
  using WithAttributes<Def>::WithAttributes;

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const {
    Run run;
    ORTOPS_RETURN_IF_ERROR(Prepare(context, &run));
    const int64_t n = run.n, c = run.c, l = run.l;
    const float epsilon = attributes.epsilon;
    const float inv_m = 1.0f / static_cast<float>(n * l);
    auto channel = [&](size_t item) {
      const auto ch = static_cast<int64_t>(item);
      const float mean = LoadFloat<Float32>(run.mean.data, item);
      const float std_dev = std::sqrt(LoadFloat<Float32>(run.var.data, item) + epsilon);
      const float w = LoadFloat<T>(run.scale.data, item);
      float db = 0.0f, s = 0.0f;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t base = (i * c + ch) * l;
        for (int64_t j = 0; j < l; ++j) {
          const auto at = static_cast<size_t>(base + j);
          const float d = LoadFloat<T>(run.dy.data, at);
          const float xc = LoadFloat<T>(run.x.data, at) - mean;
          db += d;
          s += xc * d;
        }
      }
      const float dw = s / std_dev;
      const float k = ((s / std_dev) / std_dev) * inv_m;
      const float a = db * inv_m;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t base = (i * c + ch) * l;
        for (int64_t j = 0; j < l; ++j) {
          const auto at = static_cast<size_t>(base + j);
          const float xc = LoadFloat<T>(run.x.data, at) - mean;
          StoreFloat<T>(run.dx, at, (((LoadFloat<T>(run.dy.data, at) - a) - xc * k) / std_dev) * w);
        }
      }
      run.StoreParamGrads<T>(item, dw, db);
    };
    return ForEachItem(context, static_cast<size_t>(c), static_cast<int64_t>(run.x.count), channel);
  }
};

}  // namespace

void RegisterCpu(OpList& list) { list.AddDeclared<Declaration, CpuKernel>(); }

}  // namespace ortops::batch_norm_grad
