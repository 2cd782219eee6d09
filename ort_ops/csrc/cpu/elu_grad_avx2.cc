// AVX2 + F16C EluGrad loops (compiled for those ISAs by function attributes, called only on
// CPUs that have them). Vector lanes whose float32 result is NaN are redone with the scalar
// conversions, because F16C quiets signalling NaNs where the NumPy reference does not.
#include "cpu/elu_grad_loops.h"
#include "common/elu_grad_math.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define ORTOPS_AVX2 __attribute__((target("avx2,f16c")))

namespace ortops {
namespace {

constexpr size_t kLanes = 8;

bool MisalignedTo(const void* p, uintptr_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) != 0;
}

ORTOPS_AVX2 inline __m256 Select(__m256 g, __m256 a, __m256 alpha) {
  const __m256 product = _mm256_mul_ps(g, _mm256_add_ps(a, alpha));
  const __m256 negative = _mm256_cmp_ps(a, _mm256_setzero_ps(), _CMP_LT_OQ);
  return _mm256_blendv_ps(g, product, negative);
}

ORTOPS_AVX2 inline bool AnyNan(__m256 v) {
  return _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0;
}

ORTOPS_AVX2 void F32(const float* g, const float* a, float* y, size_t n, float alpha,
                     bool streaming) {
  const __m256 va = _mm256_set1_ps(alpha);
  size_t i = 0;
  if (streaming) {
    for (; i < n && MisalignedTo(y + i, 32); ++i) y[i] = EluGrad32(g[i], a[i], alpha);
    for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
      const __m256 y0 = Select(_mm256_loadu_ps(g + i), _mm256_loadu_ps(a + i), va);
      const __m256 y1 =
          Select(_mm256_loadu_ps(g + i + kLanes), _mm256_loadu_ps(a + i + kLanes), va);
      _mm256_stream_ps(y + i, y0);
      _mm256_stream_ps(y + i + kLanes, y1);
    }
    _mm_sfence();
  }
  for (; i + kLanes <= n; i += kLanes) {
    _mm256_storeu_ps(y + i, Select(_mm256_loadu_ps(g + i), _mm256_loadu_ps(a + i), va));
  }
  for (; i < n; ++i) y[i] = EluGrad32(g[i], a[i], alpha);
}

ORTOPS_AVX2 inline __m256 LoadHalf(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

ORTOPS_AVX2 inline void Store16(uint16_t* p, __m128i v, bool streaming) {
  if (streaming) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(p), v);
  } else {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v);
  }
}

ORTOPS_AVX2 void F16(const uint16_t* g, const uint16_t* a, uint16_t* y, size_t n, float alpha,
                     bool streaming) {
  const __m256 va = _mm256_set1_ps(alpha);
  size_t i = 0;
  if (streaming) {
    for (; i < n && MisalignedTo(y + i, 16); ++i) {
      y[i] = FloatToHalf(EluGrad32(HalfToFloat(g[i]), HalfToFloat(a[i]), alpha));
    }
  }
  streaming = streaming && !MisalignedTo(y + i, 16);
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    const __m256 r0 = Select(LoadHalf(g + i), LoadHalf(a + i), va);
    const __m256 r1 = Select(LoadHalf(g + i + kLanes), LoadHalf(a + i + kLanes), va);
    if (AnyNan(_mm256_add_ps(r0, r1))) {  // a NaN in either: redo both exactly
      EluGradScalar<Float16>(g + i, a + i, y + i, 2 * kLanes, alpha);
    } else {
      Store16(y + i, _mm256_cvtps_ph(r0, kRound), streaming);
      Store16(y + i + kLanes, _mm256_cvtps_ph(r1, kRound), streaming);
    }
  }
  if (streaming) _mm_sfence();
  EluGradScalar<Float16>(g + i, a + i, y + i, n - i, alpha);
}

// float32 -> bfloat16 bits (in the low half of each lane), rounding to nearest even. NaN lanes
// are not handled here: the loop redoes blocks holding a NaN with the scalar conversion.
ORTOPS_AVX2 inline __m256i RoundToBFloat16Bits(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i bias = _mm256_add_epi32(
      _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1)), _mm256_set1_epi32(0x7fff));
  return _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
}

// bfloat16 -> float32 is a 16-bit shift: interleaving zeros below the 16-bit values gives the
// float32 bits of elements {0-3, 8-11} (low) and {4-7, 12-15} (high) with no cross-lane
// shuffle; packing the two results with packus restores the element order.
ORTOPS_AVX2 void BF16(const uint16_t* g, const uint16_t* a, uint16_t* y, size_t n, float alpha,
                      bool streaming) {
  const __m256 va = _mm256_set1_ps(alpha);
  const __m256i zero = _mm256_setzero_si256();
  size_t i = 0;
  if (streaming) {
    for (; i < n && MisalignedTo(y + i, 32); ++i) {
      y[i] = FloatToBFloat16(EluGrad32(BFloat16ToFloat(g[i]), BFloat16ToFloat(a[i]), alpha));
    }
  }
  streaming = streaming && !MisalignedTo(y + i, 32);
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    const __m256i gv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + i));
    const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
    const __m256 lo = Select(_mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, gv)),
                             _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, av)), va);
    const __m256 hi = Select(_mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, gv)),
                             _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, av)), va);
    if (AnyNan(_mm256_add_ps(lo, hi))) {  // a NaN in either half: redo the block exactly
      EluGradScalar<BFloat16>(g + i, a + i, y + i, 2 * kLanes, alpha);
      continue;
    }
    const __m256i packed = _mm256_packus_epi32(RoundToBFloat16Bits(lo), RoundToBFloat16Bits(hi));
    if (streaming) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(y + i), packed);
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), packed);
    }
  }
  if (streaming) _mm_sfence();
  EluGradScalar<BFloat16>(g + i, a + i, y + i, n - i, alpha);
}

}  // namespace

const EluGradLoops* Avx2Loops() {
  static const EluGradLoops loops{"avx2", F32, F16, BF16};
  return &loops;
}

bool CpuHasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}

}  // namespace ortops

#else  // not x86-64 with GCC/Clang: no vector loops

namespace ortops {
const EluGradLoops* Avx2Loops() { return nullptr; }
bool CpuHasAvx2() { return false; }
}  // namespace ortops

#endif
