// The float32 sum of one softmax row as CANN's kernels accumulate it: in blocks, the block sums
// combined pairwise. hicann/ops-nn@e5c3fa93 activation/softmax_cross_entropy_with_logits/
// op_kernel/arch35/softmax_cross_entropy_with_logits_split_r.h (a row too long for the unified
// buffer): each tile of the row is reduced by a vector ReduceSum and the tile sums are combined
// "完全二分累加" (a complete binary tree: UpdateCache, cacheID = trailing ones of the tile index);
// the tile length comes from the tiling (UB size), which the simulator does not model. Here: blocks
// of kRowSumBlock elements summed in order, halves summed recursively. Relative error at most
// about (kRowSumBlock + log2(n / kRowSumBlock)) * 2^-24 of the sum of |terms| (a running sum's
// grows with n: at 2^24 comparable terms it stalls).
#pragma once

#include <cstddef>

#include "numerics.h"

namespace aclsim {

// Elements one vector register holds in float32 (256-byte registers), the block summed in order.
constexpr size_t kRowSumBlock = 64;

// Sum of v[0, n) (n >= 1): in order within a block, halves (split at a multiple of the block) pairwise.
inline float row_sum(const float* v, size_t n) {
  if (n <= kRowSumBlock) {
    float s = v[0];
    for (size_t k = 1; k < n; ++k) s = fadd(s, v[k]);
    return s;
  }
  const size_t blocks = (n + kRowSumBlock - 1) / kRowSumBlock;
  const size_t half = (blocks / 2) * kRowSumBlock;
  return fadd(row_sum(v, half), row_sum(v + half, n - half));
}

}  // namespace aclsim
