// Scalar EluGrad math and exact float conversions, shared by the portable and AVX2 paths.
//
// The conversions reproduce NumPy (float16) and ml_dtypes (bfloat16) bit for bit, NaNs
// included, because the NumPy reference is the definition of the op's results:
//   float16 -> float32, bfloat16 -> float32: exact, NaN payloads kept (no quieting);
//   float32 -> float16: round to nearest even; NaN -> sign|0x7c00|(mantissa >> 13), never 0;
//   float32 -> bfloat16: round to nearest even on the bit pattern; NaN -> sign|0x7fc0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ortops {

inline uint32_t BitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float FloatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return FloatOf(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return FloatOf(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return FloatOf(sign);
  uint32_t e = 113;  // subnormal half: normalise the mantissa
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return FloatOf(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

inline uint16_t FloatToHalf(float f) {
  const uint32_t u = BitsOf(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t exp = (u >> 23) & 0xffu;
  const uint32_t mant = u & 0x7fffffu;
  if (exp == 0xff) {  // Inf or NaN
    if (mant == 0) return static_cast<uint16_t>(sign | 0x7c00u);
    const uint32_t payload = mant >> 13;
    return static_cast<uint16_t>(sign | 0x7c00u | (payload != 0 ? payload : 1u));
  }
  if (exp >= 143) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 2^16: overflow
  if (exp >= 113) {  // normal half range [2^-14, 2^16): carries may round up to Inf
    uint32_t h = ((exp - 112u) << 10) | (mant >> 13);
    const uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  if (exp == 0) return static_cast<uint16_t>(sign);  // float32 zero/subnormal: < 2^-126
  const uint32_t shift = 126u - exp;                  // >= 14; unit is 2^-24
  if (shift > 24) return static_cast<uint16_t>(sign);
  const uint32_t m = mant | 0x800000u;
  uint32_t h = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

inline float BFloat16ToFloat(uint16_t b) { return FloatOf(static_cast<uint32_t>(b) << 16); }

inline uint16_t FloatToBFloat16(float f) {
  const uint32_t u = BitsOf(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7fc0u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// The op in float32: strict less-than, so NaN and -0.0 activations select grads.
inline float EluGrad32(float grads, float activations, float alpha) {
  const float product = grads * (activations + alpha);
  return activations < 0.0f ? product : grads;
}

// Element types: storage type and exact conversions to and from float32.
struct Float32 {
  using Storage = float;
  static float ToFloat(float v) { return v; }
  static float FromFloat(float v) { return v; }
};
struct Float16 {
  using Storage = uint16_t;
  static float ToFloat(uint16_t v) { return HalfToFloat(v); }
  static uint16_t FromFloat(float v) { return FloatToHalf(v); }
};
struct BFloat16 {
  using Storage = uint16_t;
  static float ToFloat(uint16_t v) { return BFloat16ToFloat(v); }
  static uint16_t FromFloat(float v) { return FloatToBFloat16(v); }
};

template <typename T>
void EluGradScalar(const typename T::Storage* grads, const typename T::Storage* activations,
                   typename T::Storage* y, size_t n, float alpha) {
  for (size_t i = 0; i < n; ++i) {
    y[i] = T::FromFloat(EluGrad32(T::ToFloat(grads[i]), T::ToFloat(activations[i]), alpha));
  }
}

}  // namespace ortops
