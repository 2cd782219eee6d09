// ONNX element types of the op library's dtypes, and their names for error messages.
#pragma once

#include "common/ort_api.h"
#include "common/elu_grad_math.h"

namespace ortops {

template <typename T>
struct OnnxType;
template <>
struct OnnxType<Float32> {
  static constexpr ONNXTensorElementDataType value = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
};
template <>
struct OnnxType<Float16> {
  static constexpr ONNXTensorElementDataType value = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
};
template <>
struct OnnxType<BFloat16> {
  static constexpr ONNXTensorElementDataType value = ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16;
};

const char* ElementTypeName(ONNXTensorElementDataType type);

}  // namespace ortops
