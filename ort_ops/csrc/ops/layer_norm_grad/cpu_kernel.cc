// LayerNormGrad on the CPU EP, in float32 with each operation rounded, then one rounding to T:
//   dx: one row per work item on the session's intra-op pool (on the calling thread for small
//       tensors): xhat_k = (x_k - mean) * rstd, g_k = dy_k * scale_k, s1 = g_0 + g_1 + ... and
//       s2 = g_0 * xhat_0 + ... in increasing k, a = s1 / M, b = s2 / M,
//       dx_k = (g_k - (a + xhat_k * b)) * rstd (CANN's formula, docs/ops/LayerNormGrad.md);
//   dscale, dbias: one column per work item, sums over the rows in increasing order of dy * xhat
//       and of dy.
#include "common/parallel.h"
#include "ops/layer_norm_grad/layer_norm_grad.h"

namespace ortops::layer_norm_grad {
namespace {

template <typename T>
struct CpuKernel : WithAttributes<Def> {
  using WithAttributes<Def>::WithAttributes;

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const {
    Run run;
    ORTOPS_RETURN_IF_ERROR(Prepare(context, attributes.axis, &run));
    const int64_t m = run.m, rows = run.rows;
    const auto elements = static_cast<int64_t>(run.x.count);
    auto xhat = [&run, m](int64_t r, int64_t k) {
      const auto at = static_cast<size_t>(r * m + k);
      const auto stat = static_cast<size_t>(r);
      return (LoadFloat<T>(run.x.data, at) - LoadFloat<Float32>(run.mean.data, stat)) *
             LoadFloat<Float32>(run.rstd.data, stat);
    };
    auto row = [&](size_t item) {
      const auto r = static_cast<int64_t>(item);
      const float rstd = LoadFloat<Float32>(run.rstd.data, item);
      float s1 = 0.0f, s2 = 0.0f;
      for (int64_t k = 0; k < m; ++k) {
        const float g = LoadFloat<T>(run.dy.data, static_cast<size_t>(r * m + k)) *
                        LoadFloat<T>(run.scale.data, static_cast<size_t>(k));
        const float gx = g * xhat(r, k);
        s1 = k == 0 ? g : s1 + g;
        s2 = k == 0 ? gx : s2 + gx;
      }
      const float fm = static_cast<float>(m);
      const float a = s1 / fm, b = s2 / fm;
      for (int64_t k = 0; k < m; ++k) {
        const auto at = static_cast<size_t>(r * m + k);
        const float g = LoadFloat<T>(run.dy.data, at) * LoadFloat<T>(run.scale.data, static_cast<size_t>(k));
        StoreFloat<T>(run.dx, at, (g - (a + xhat(r, k) * b)) * rstd);
      }
    };
    if (run.x.count > 0) {
      ORTOPS_RETURN_IF_ERROR(ForEachItem(context, static_cast<size_t>(rows), elements, row));
    }
    if (run.dscale == nullptr && run.dbias == nullptr) return nullptr;
    auto column = [&](size_t item) {
      const auto k = static_cast<int64_t>(item);
      float ds = 0.0f, db = 0.0f;
      for (int64_t r = 0; r < rows; ++r) {
        const float d = LoadFloat<T>(run.dy.data, static_cast<size_t>(r * m + k));
        const float dxh = d * xhat(r, k);
        ds = r == 0 ? dxh : ds + dxh;
        db = r == 0 ? d : db + d;
      }
      run.StoreParamGrads<T>(item, ds, db);
    };
    return ForEachItem(context, static_cast<size_t>(m), elements, column);
  }
};

}  // namespace

void RegisterCpu(OpList& list) { list.AddDeclared<Declaration, CpuKernel>(); }

}  // namespace ortops::layer_norm_grad
