// AVX2 + F16C EluGrad loops (compiled for those ISAs by function attributes, called only on
// CPUs that have them). Blocks whose float32 results hold a NaN are redone with the scalar math
// (cpu_math.h): it alone decides NaN payloads, and F16C quiets signalling NaNs where the
// NumPy reference does not. Loads are unaligned (any address); non-temporal stores only start
// once the output pointer is 32-byte aligned, which needs an element-aligned output.
#include "ops/elu_grad/cpu_loops.h"
#include "ops/elu_grad/cpu_math.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define ORTOPS_AVX2 __attribute__((target("avx2,f16c")))

namespace ortops::elu_grad {
namespace {

constexpr size_t kLanes = 8;
constexpr size_t kBlock = 2 * kLanes;  // elements per loop iteration

using Bytes = const unsigned char*;

bool AlignedTo(const void* p, uintptr_t bytes) { return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0; }

ORTOPS_AVX2 inline __m256 Select(__m256 g, __m256 a, __m256 alpha) {
  const __m256 product = _mm256_mul_ps(g, _mm256_add_ps(a, alpha));
  const __m256 negative = _mm256_cmp_ps(a, _mm256_setzero_ps(), _CMP_LT_OQ);
  return _mm256_blendv_ps(g, product, negative);
}

ORTOPS_AVX2 inline bool AnyNan(__m256 v) { return _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0; }

ORTOPS_AVX2 inline __m256 LoadF32(Bytes p) {
  return _mm256_castsi256_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i_u*>(p)));
}
ORTOPS_AVX2 inline __m256 LoadHalf(Bytes p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i_u*>(p)));
}
ORTOPS_AVX2 inline __m256i Load256(Bytes p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i_u*>(p)); }

// 32 bytes at `p`: streamed (p is then 32-byte aligned) or an unaligned store.
ORTOPS_AVX2 inline void Store256(unsigned char* p, __m256i v, bool streaming) {
  if (streaming) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p), v);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i_u*>(p), v);
  }
}
ORTOPS_AVX2 inline void Store128(unsigned char* p, __m128i v, bool streaming) {
  if (streaming) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(p), v);
  } else {
    _mm_storeu_si128(reinterpret_cast<__m128i_u*>(p), v);
  }
}

// Elements done in scalar before non-temporal stores can start: until y + i is `bytes`-aligned.
// 0 and no streaming when y is not element-aligned (it would never become aligned).
template <typename T>
size_t StreamingPrologue(const void* y, size_t n, size_t bytes, bool* streaming) {
  constexpr size_t kSize = sizeof(typename T::Storage);
  if (!*streaming) return 0;
  if (!AlignedTo(y, kSize)) {
    *streaming = false;
    return 0;
  }
  const size_t misalign = reinterpret_cast<uintptr_t>(y) & (bytes - 1);
  const size_t head = misalign == 0 ? 0 : (bytes - misalign) / kSize;
  return head < n ? head : n;
}

// float32 -> bfloat16 bits (in the low half of each lane), rounding to nearest even. NaN lanes
// are not handled here: the loop redoes blocks holding a NaN with the scalar conversion.
ORTOPS_AVX2 inline __m256i RoundToBFloat16Bits(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i bias =
      _mm256_add_epi32(_mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1)), _mm256_set1_epi32(0x7fff));
  return _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
}

ORTOPS_AVX2 void F32(const void* gv, const void* av, void* yv, size_t n, float alpha, bool streaming) {
  const auto g = static_cast<Bytes>(gv), a = static_cast<Bytes>(av);
  auto* y = static_cast<unsigned char*>(yv);
  const __m256 va = _mm256_set1_ps(alpha);
  size_t i = StreamingPrologue<Float32>(y, n, 32, &streaming);
  EluGradScalar<Float32>(g, a, y, i, alpha);
  for (; i + kBlock <= n; i += kBlock) {
    const size_t at = i * sizeof(float);
    const __m256 r0 = Select(LoadF32(g + at), LoadF32(a + at), va);
    const __m256 r1 = Select(LoadF32(g + at + 32), LoadF32(a + at + 32), va);
    if (AnyNan(_mm256_add_ps(r0, r1))) {  // a NaN in either: the scalar math decides its payload
      EluGradScalar<Float32>(g + at, a + at, y + at, kBlock, alpha);
      continue;
    }
    Store256(y + at, _mm256_castps_si256(r0), streaming);
    Store256(y + at + 32, _mm256_castps_si256(r1), streaming);
  }
  if (streaming) _mm_sfence();
  EluGradScalar<Float32>(g + i * 4, a + i * 4, y + i * 4, n - i, alpha);
}

ORTOPS_AVX2 void F16(const void* gv, const void* av, void* yv, size_t n, float alpha, bool streaming) {
  const auto g = static_cast<Bytes>(gv), a = static_cast<Bytes>(av);
  auto* y = static_cast<unsigned char*>(yv);
  const __m256 va = _mm256_set1_ps(alpha);
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  size_t i = StreamingPrologue<Float16>(y, n, 16, &streaming);
  EluGradScalar<Float16>(g, a, y, i, alpha);
  for (; i + kBlock <= n; i += kBlock) {
    const size_t at = i * 2;
    const __m256 r0 = Select(LoadHalf(g + at), LoadHalf(a + at), va);
    const __m256 r1 = Select(LoadHalf(g + at + 16), LoadHalf(a + at + 16), va);
    if (AnyNan(_mm256_add_ps(r0, r1))) {  // a NaN in either: redo both exactly
      EluGradScalar<Float16>(g + at, a + at, y + at, kBlock, alpha);
      continue;
    }
    Store128(y + at, _mm256_cvtps_ph(r0, kRound), streaming);
    Store128(y + at + 16, _mm256_cvtps_ph(r1, kRound), streaming);
  }
  if (streaming) _mm_sfence();
  EluGradScalar<Float16>(g + i * 2, a + i * 2, y + i * 2, n - i, alpha);
}

// bfloat16 -> float32 is a 16-bit shift: interleaving zeros below the 16-bit values gives the
// float32 bits of elements {0-3, 8-11} (low) and {4-7, 12-15} (high) with no cross-lane
// shuffle; packing the two results with packus restores the element order.
ORTOPS_AVX2 void BF16(const void* gv, const void* av, void* yv, size_t n, float alpha, bool streaming) {
  const auto g = static_cast<Bytes>(gv), a = static_cast<Bytes>(av);
  auto* y = static_cast<unsigned char*>(yv);
  const __m256 va = _mm256_set1_ps(alpha);
  const __m256i zero = _mm256_setzero_si256();
  size_t i = StreamingPrologue<BFloat16>(y, n, 32, &streaming);
  EluGradScalar<BFloat16>(g, a, y, i, alpha);
  for (; i + kBlock <= n; i += kBlock) {
    const size_t at = i * 2;
    const __m256i gv16 = Load256(g + at);
    const __m256i av16 = Load256(a + at);
    const __m256 lo = Select(_mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, gv16)),
                             _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, av16)), va);
    const __m256 hi = Select(_mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, gv16)),
                             _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, av16)), va);
    if (AnyNan(_mm256_add_ps(lo, hi))) {  // a NaN in either half: redo the block exactly
      EluGradScalar<BFloat16>(g + at, a + at, y + at, kBlock, alpha);
      continue;
    }
    Store256(y + at, _mm256_packus_epi32(RoundToBFloat16Bits(lo), RoundToBFloat16Bits(hi)), streaming);
  }
  if (streaming) _mm_sfence();
  EluGradScalar<BFloat16>(g + i * 2, a + i * 2, y + i * 2, n - i, alpha);
}

}  // namespace

const CpuLoops* Avx2Loops() {
  static const CpuLoops loops{"avx2", F32, F16, BF16};
  return &loops;
}

}  // namespace ortops::elu_grad

#else  // not x86-64 with GCC/Clang: no vector loops

namespace ortops::elu_grad {
const CpuLoops* Avx2Loops() { return nullptr; }
}  // namespace ortops::elu_grad

#endif
