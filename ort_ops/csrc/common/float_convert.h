// Exact float16 / bfloat16 <-> float32 conversions, bit for bit those of NumPy (float16) and
// ml_dtypes (bfloat16), NaNs included:
//   float16 -> float32, bfloat16 -> float32: exact, NaN payloads kept (no quieting);
//   float32 -> float16: round to nearest even; NaN -> sign|0x7c00|(mantissa >> 13), never 0;
//   float32 -> bfloat16: round to nearest even on the bit pattern; NaN -> sign|0x7fc0.
#pragma once

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

// The same NaN with its quiet bit set (IEEE 754's propagation of an input NaN).
inline float QuietNan(float nan) { return FloatOf(BitsOf(nan) | 0x00400000u); }

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
  const uint32_t shift = 126u - exp;                 // >= 14; unit is 2^-24
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

}  // namespace ortops
