// The element types of the op library (float32, float16, bfloat16): storage, exact conversions to
// and from float32, their ONNX type, and element access at any address (buffers bound through
// IOBinding need not be aligned to the element size: every access goes through memcpy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/float_convert.h"
#include "common/ort_api.h"

namespace ortops {

struct Float32 {
  using Storage = float;
  static constexpr ONNXTensorElementDataType kOnnxType = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  static float ToFloat(float v) { return v; }
  static float FromFloat(float v) { return v; }
};
struct Float16 {
  using Storage = uint16_t;
  static constexpr ONNXTensorElementDataType kOnnxType = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
  static float ToFloat(uint16_t v) { return HalfToFloat(v); }
  static uint16_t FromFloat(float v) { return FloatToHalf(v); }
};
struct BFloat16 {
  using Storage = uint16_t;
  static constexpr ONNXTensorElementDataType kOnnxType = ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16;
  static float ToFloat(uint16_t v) { return BFloat16ToFloat(v); }
  static uint16_t FromFloat(float v) { return FloatToBFloat16(v); }
};

// Element `i` of a buffer of T at any address, as float32 (exact).
template <typename T>
inline float LoadFloat(const void* data, size_t i) {
  typename T::Storage v;
  std::memcpy(&v, static_cast<const unsigned char*>(data) + i * sizeof v, sizeof v);
  return T::ToFloat(v);
}

// Stores float32 `value` rounded once to T (round to nearest even) as element `i`.
template <typename T>
inline void StoreFloat(void* data, size_t i, float value) {
  const typename T::Storage v = T::FromFloat(value);
  std::memcpy(static_cast<unsigned char*>(data) + i * sizeof v, &v, sizeof v);
}

// `data` advanced by `count` elements of T.
template <typename T>
inline const void* ElementAt(const void* data, size_t count) {
  return static_cast<const unsigned char*>(data) + count * sizeof(typename T::Storage);
}
template <typename T>
inline void* ElementAt(void* data, size_t count) {
  return static_cast<unsigned char*>(data) + count * sizeof(typename T::Storage);
}

// "float32", "float16", ... for error messages.
const char* ElementTypeName(ONNXTensorElementDataType type);

}  // namespace ortops
