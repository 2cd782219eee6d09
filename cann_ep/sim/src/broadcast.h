// Iterates over an output shape with N broadcast inputs (strides from broadcast_strides).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace aclsim {

template <size_t N, typename F>
void for_each_broadcast(const std::vector<int64_t>& out, const std::array<std::vector<int64_t>, N>& strides, F f) {
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  size_t rank = out.size();
  std::vector<int64_t> idx(rank, 0);
  std::array<int64_t, N> off{};
  for (int64_t i = 0; i < total; ++i) {
    f(i, off);
    for (size_t d = rank; d-- > 0;) {
      ++idx[d];
      for (size_t n = 0; n < N; ++n) off[n] += strides[n][d];
      if (idx[d] < out[d]) break;
      for (size_t n = 0; n < N; ++n) off[n] -= strides[n][d] * out[d];
      idx[d] = 0;
    }
  }
}

}  // namespace aclsim
