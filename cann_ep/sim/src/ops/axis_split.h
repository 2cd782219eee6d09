// A tensor seen around one axis, for the ops that work along it (softmax, cumsum, arg max / min).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace aclsim {

// Row-major dims as [outer, n, inner]: the product of the dims before the axis, the axis's extent,
// the product of the dims after it. Element (o, k, i) is at (o * n + k) * inner + i. An axis past
// the last dim (a scalar's axis 0) gives [1, 1, 1].
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};

inline AxisSplit split_at(const std::vector<int64_t>& dims, size_t axis) {
  AxisSplit s;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (d < axis)
      s.outer *= dims[d];
    else if (d == axis)
      s.n = dims[d];
    else
      s.inner *= dims[d];
  }
  return s;
}

}  // namespace aclsim
