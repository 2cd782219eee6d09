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

// One dtype's vector steps over a block of kBlock elements at g, a (results at y): Compute gives
// the block's float32 results in two halves, Store writes them as the dtype (streamed when
// `streaming`: y is then kStreamAlign-byte aligned).
struct F32Block {
  using Type = Float32;
  static constexpr size_t kStreamAlign = 32;
  ORTOPS_AVX2 static void Compute(Bytes g, Bytes a, __m256 va, __m256* r0, __m256* r1) {
    *r0 = Select(LoadF32(g), LoadF32(a), va);
    *r1 = Select(LoadF32(g + 32), LoadF32(a + 32), va);
  }
  ORTOPS_AVX2 static void Store(unsigned char* y, __m256 r0, __m256 r1, bool streaming) {
    Store256(y, _mm256_castps_si256(r0), streaming);
    Store256(y + 32, _mm256_castps_si256(r1), streaming);
  }
};

struct F16Block {
  using Type = Float16;
  static constexpr size_t kStreamAlign = 16;
  ORTOPS_AVX2 static void Compute(Bytes g, Bytes a, __m256 va, __m256* r0, __m256* r1) {
    *r0 = Select(LoadHalf(g), LoadHalf(a), va);
    *r1 = Select(LoadHalf(g + 16), LoadHalf(a + 16), va);
  }
  ORTOPS_AVX2 static void Store(unsigned char* y, __m256 r0, __m256 r1, bool streaming) {
    constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    Store128(y, _mm256_cvtps_ph(r0, kRound), streaming);
    Store128(y + 16, _mm256_cvtps_ph(r1, kRound), streaming);
  }
};

// bfloat16 -> float32 is a 16-bit shift: interleaving zeros below the 16-bit values gives the
// float32 bits of elements {0-3, 8-11} (low half, r0) and {4-7, 12-15} (high half, r1) with no
// cross-lane shuffle; packing the two results with packus restores the element order.
struct BF16Block {
  using Type = BFloat16;
  static constexpr size_t kStreamAlign = 32;
  ORTOPS_AVX2 static void Compute(Bytes g, Bytes a, __m256 va, __m256* r0, __m256* r1) {
    const __m256i zero = _mm256_setzero_si256();
    const __m256i gv16 = Load256(g);
    const __m256i av16 = Load256(a);
    *r0 = Select(_mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, gv16)),
                 _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, av16)), va);
    *r1 = Select(_mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, gv16)),
                 _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, av16)), va);
  }
  ORTOPS_AVX2 static void Store(unsigned char* y, __m256 r0, __m256 r1, bool streaming) {
    Store256(y, _mm256_packus_epi32(RoundToBFloat16Bits(r0), RoundToBFloat16Bits(r1)), streaming);
  }
};

// The loop of every dtype: scalar elements until streamed stores can start, blocks of kBlock
// elements (a block whose results hold a NaN redone with the scalar math, which alone decides NaN
// payloads), then the scalar tail.
template <typename B>
ORTOPS_AVX2 void BlockLoop(const void* gv, const void* av, void* yv, size_t n, float alpha, bool streaming) {
  using T = typename B::Type;
  constexpr size_t kSize = sizeof(typename T::Storage);
  const auto g = static_cast<Bytes>(gv), a = static_cast<Bytes>(av);
  auto* y = static_cast<unsigned char*>(yv);
  const __m256 va = _mm256_set1_ps(alpha);
  size_t i = StreamingPrologue<T>(y, n, B::kStreamAlign, &streaming);
  EluGradScalar<T>(g, a, y, i, alpha);
  for (; i + kBlock <= n; i += kBlock) {
    const size_t at = i * kSize;
    __m256 r0, r1;
    B::Compute(g + at, a + at, va, &r0, &r1);
    if (AnyNan(_mm256_add_ps(r0, r1))) {
      EluGradScalar<T>(g + at, a + at, y + at, kBlock, alpha);
      continue;
    }
    B::Store(y + at, r0, r1, streaming);
  }
  if (streaming) _mm_sfence();
  EluGradScalar<T>(g + i * kSize, a + i * kSize, y + i * kSize, n - i, alpha);
}

}  // namespace

const CpuLoops* Avx2Loops() {
  static const CpuLoops loops{"avx2", BlockLoop<F32Block>, BlockLoop<F16Block>, BlockLoop<BF16Block>};
  return &loops;
}

}  // namespace ortops::elu_grad

#else  // not x86-64 with GCC/Clang: no vector loops

namespace ortops::elu_grad {
const CpuLoops* Avx2Loops() { return nullptr; }
}  // namespace ortops::elu_grad

#endif
