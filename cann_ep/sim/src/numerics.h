// Bit-exact float16 / bfloat16 <-> float32 conversions (NumPy / ml_dtypes semantics).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace aclsim {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Exact; NaN payloads are kept (not quieted).
inline float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
  // zero or subnormal: mant * 2^-24, exact in float32
  float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
  return sign ? -v : v;
}

// Like NumPy's astype(np.float16): round to nearest even, overflow to inf, subnormals,
// NaN -> sign | 0x7c00 | (mantissa >> 13), with the mantissa forced to 1 if it becomes 0.
inline uint16_t f32_to_f16(float f) {
  uint32_t x = f32_bits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  uint32_t exp = ax >> 23;
  uint32_t mant = ax & 0x7fffffu;
  if (exp == 0xff) {
    if (mant == 0) return sign | 0x7c00u;
    uint16_t m = static_cast<uint16_t>(mant >> 13);
    return sign | 0x7c00u | (m == 0 ? 1u : m);
  }
  if (exp >= 143) return sign | 0x7c00u;  // >= 2^16: overflow
  if (exp >= 113) {                       // normal half range [2^-14, 2^16)
    uint32_t q = ((exp - 112u) << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;  // may carry into inf: correct
    return sign | static_cast<uint16_t>(q);
  }
  if (exp < 102) return sign;  // < 2^-25: rounds to zero
  // subnormal half: value = m24 * 2^(exp-150), in units of 2^-24 -> shift right by 126-exp
  uint32_t m24 = mant | 0x800000u;
  uint32_t shift = 126u - exp;  // 14..24
  uint32_t q = m24 >> shift;
  uint32_t rem = m24 & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return sign | static_cast<uint16_t>(q);
}

inline float bf16_to_f32(uint16_t b) { return f32_from_bits(static_cast<uint32_t>(b) << 16); }

// Like ml_dtypes.bfloat16: NaN -> sign | 0x7fc0, otherwise round to nearest even on the bits.
inline uint16_t f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7fc0u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// NaN results of binary float arithmetic, made independent of the order the compiler emits the
// operands in: the first operand's NaN quieted, else the second's, else (inf - inf, 0 * inf, ...)
// the default NaN (negative, quiet, no payload). That is x86's rule for `a op b`; the simulator
// uses it as its model of the device's (CANN documents no NaN payload rule).
inline float nan_result(float a, float b) {
  if (a != a) return f32_from_bits(f32_bits(a) | 0x00400000u);
  if (b != b) return f32_from_bits(f32_bits(b) | 0x00400000u);
  return f32_from_bits(0xFFC00000u);
}

inline double nan_result(double a, double b) {
  uint64_t u;
  if (a != a || b != b) {
    std::memcpy(&u, a != a ? &a : &b, 8);
    u |= 0x0008000000000000ull;
  } else {
    u = 0xFFF8000000000000ull;
  }
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

// One IEEE float32 operation with nan_result's NaN rule, so NaN outputs are the same bits whatever
// order the compiler emits the operands in (kernels use these for every arithmetic step).
inline float fadd(float a, float b) {
  const float y = a + b;
  return y != y ? nan_result(a, b) : y;
}
inline float fsub(float a, float b) {
  const float y = a - b;
  return y != y ? nan_result(a, b) : y;
}
inline float fmul(float a, float b) {
  const float y = a * b;
  return y != y ? nan_result(a, b) : y;
}
inline float fdiv(float a, float b) {
  const float y = a / b;
  return y != y ? nan_result(a, b) : y;
}

// Float -> integer without undefined behaviour: NaN -> 0, out of range saturates to the
// integer type's limits, otherwise truncation toward zero (RoundMode CAST_TRUNC).
template <typename I>
I saturate_trunc(double v) {
  static_assert(std::is_integral<I>::value, "integer target");
  if (v != v) return 0;
  const double lo = static_cast<double>(std::numeric_limits<I>::min());
  const double hi = static_cast<double>(std::numeric_limits<I>::max());  // may round up (int64: 2^63)
  if (v <= lo) return std::numeric_limits<I>::min();
  if (v >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(v);  // |v| < 2^63 here, truncates
}

// Float -> integer rounding half away from zero (RoundMode CAST_ROUND), saturating, NaN -> 0.
template <typename I>
I saturate_round(double v) {
  return v != v ? 0 : saturate_trunc<I>(std::round(v));
}

// int64 -> float32 rounding half away from zero (RoundMode CAST_ROUND); a plain conversion rounds
// to nearest even (CAST_RINT).
inline float i64_to_f32_round_away(int64_t v) {
  const uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if (mag < (uint64_t{1} << 24)) return static_cast<float>(v);  // exact
  int bits = 64;
  while (((mag >> (bits - 1)) & 1u) == 0) --bits;
  const int shift = bits - 24;
  uint64_t q = mag >> shift;
  const uint64_t rem = mag & ((uint64_t{1} << shift) - 1);
  if (rem >= (uint64_t{1} << (shift - 1))) ++q;              // ties away from zero
  const float f = std::ldexp(static_cast<float>(q), shift);  // q <= 2^24: exact
  return v < 0 ? -f : f;
}

}  // namespace aclsim
