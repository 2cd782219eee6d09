// EluGrad's float32 math on the CPU, shared by the portable and AVX2 loops (the AVX2 loops redo
// any block holding a NaN with these scalar functions, so NaN results come from here alone).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/elementwise.h"
#include "common/float_convert.h"

#ifndef ORTOPS_DEFAULT_NAN_BITS
#error "ORTOPS_DEFAULT_NAN_BITS comes from ort_ops/domain.py through CMake"
#endif

namespace ortops::elu_grad {

// The NaN of the product branch when it is NaN (docs/ops/EluGrad.md, "NaN payloads"): grads'
// NaN quieted, else alpha's NaN quieted, else (inf - inf, 0 * inf) the library's default NaN.
inline float EluGradProductNan(float grads, float alpha) {
  if (grads != grads) return QuietNan(grads);
  if (alpha != alpha) return QuietNan(alpha);
  return FloatOf(ORTOPS_DEFAULT_NAN_BITS);
}

// y = activations < 0 ? grads * (activations + alpha) : grads, in float32. Strict less-than: NaN
// and -0.0 activations select grads (copied bit for bit, a signalling NaN included).
inline float EluGrad32(float grads, float activations, float alpha) {
  const bool negative = activations < 0.0f;
  const float product = grads * (activations + alpha);
  const float y = negative ? product : grads;
  if (y != y && negative) return EluGradProductNan(grads, alpha);
  return y;
}

template <typename T>
inline void EluGradScalar(const void* grads, const void* activations, void* y, size_t n, float alpha) {
  MapFloat32<T>(grads, activations, y, n, [alpha](float g, float a) { return EluGrad32(g, a, alpha); });
}

}  // namespace ortops::elu_grad
