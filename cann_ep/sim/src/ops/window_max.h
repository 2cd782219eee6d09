// What a max pooling (MaxPool, MaxPool3D, MaxPool3DWithArgmaxV2) writes for one window.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>

#include "dtypes.h"
#include "op_call.h"

namespace aclsim {

// Writes output element `o` of the max pooling `c`: x's element `arg` (the op's window_argmax, an
// element index in x), bit for bit, or -inf for a window with no in-image position (arg < 0).
template <typename T>
void store_window_max(const OpCall& c, int64_t o, int64_t arg) {
  if (arg < 0) {
    store_at<T>(c.out[0].data, o, -std::numeric_limits<float>::infinity());
    return;
  }
  constexpr auto size = static_cast<int64_t>(sizeof(typename T::Storage));
  std::memmove(static_cast<unsigned char*>(c.out[0].data) + o * size,
               static_cast<const unsigned char*>(c.in[0].data) + arg * size, sizeof(typename T::Storage));
}

}  // namespace aclsim
