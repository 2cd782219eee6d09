// Maximum / Minimum of two values as the simulator's Maximum and Minimum kernels compute them
// (elementwise.cc) and ClipByValueV2 (clip.cc): a NaN in either operand gives that NaN, like
// np.maximum / np.minimum; for equal values (-0.0 and +0.0 too) the first operand.
#pragma once

#include <cmath>
#include <type_traits>

namespace aclsim {

template <typename C>
C max_nan(C a, C b) {
  if constexpr (std::is_floating_point<C>::value) {
    if (std::isnan(a)) return a;
  }
  return a >= b ? a : b;
}

template <typename C>
C min_nan(C a, C b) {
  if constexpr (std::is_floating_point<C>::value) {
    if (std::isnan(a)) return a;
  }
  return a <= b ? a : b;
}

}  // namespace aclsim
