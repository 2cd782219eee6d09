// LeakyReluGrad on the CPU EP, written on the CPU elementwise skeleton (common/elementwise.h): a
// typed float32 function, inputs loaded exactly, one round-to-nearest-even store, in chunks on the
// session's intra-op pool.
#include "common/elementwise.h"
#include "common/element_type.h"
#include "common/float_convert.h"
#include "common/op_base.h"
#include "ops/leaky_relu_grad/leaky_relu_grad.h"

#ifndef ORTOPS_DEFAULT_NAN_BITS
#error "ORTOPS_DEFAULT_NAN_BITS comes from ort_ops/domain.py through CMake"
#endif

namespace ortops::leaky_relu_grad {
namespace {

// backprops = features > 0 ? gradients : gradients * slope, in float32. Strict greater-than: NaN
// and +-0.0 features take the product. The gradients branch copies the bits (a signalling NaN
// included); a NaN product is gradients' NaN quieted, else the slope's, else the default NaN
// (0 * inf): docs/ops/LeakyReluGrad.md, "NaN payloads".
inline float LeakyReluGrad32(float gradients, float features, float slope) {
  if (features > 0.0f) return gradients;
  const float product = gradients * slope;
  if (product == product) return product;
  if (gradients != gradients) return QuietNan(gradients);
  if (slope != slope) return QuietNan(slope);
  return FloatOf(ORTOPS_DEFAULT_NAN_BITS);
}

template <typename T>
struct CpuKernel : WithAttributes<Def> {
  using WithAttributes<Def>::WithAttributes;

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const {
    const float s = attributes.negative_slope;
    return MapDeclared<Def, T>(context, [s](float g, float f) { return LeakyReluGrad32(g, f, s); });
  }
};

}  // namespace

void RegisterCpu(OpList& list) { list.AddDeclared<Declaration, CpuKernel>(); }

}  // namespace ortops::leaky_relu_grad
