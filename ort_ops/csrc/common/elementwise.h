// The numeric policy of every elementwise kernel, written once: load each operand as float32
// (exact for float16/bfloat16), compute in float32, round the result once to the output type
// (round to nearest even). `Fn` maps float32 operands to the float32 result.
#pragma once

#include <cstddef>

#include "common/element_type.h"

namespace ortops {

template <typename T, typename Fn>
inline void MapFloat32(const void* x0, const void* x1, void* y, size_t n, Fn fn) {
  for (size_t i = 0; i < n; ++i) StoreFloat<T>(y, i, fn(LoadFloat<T>(x0, i), LoadFloat<T>(x1, i)));
}

template <typename T, typename Fn>
inline void MapFloat32(const void* x0, void* y, size_t n, Fn fn) {
  for (size_t i = 0; i < n; ++i) StoreFloat<T>(y, i, fn(LoadFloat<T>(x0, i)));
}

}  // namespace ortops
