// Iterates over an output shape: with N broadcast inputs (strides from broadcast_strides), or with
// each element's multi-index.
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

// Calls f(i, idx) for every element of a row-major tensor of `dims`, in order: i its flat index,
// idx its multi-index.
template <typename F>
void for_each_index(const std::vector<int64_t>& dims, F f) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    f(i, static_cast<const std::vector<int64_t>&>(idx));
    for (size_t d = dims.size(); d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace aclsim
