// Fetching and checking an op's inputs and allocating its output, shared by every op and EP:
// dtype and shape checks with errors naming the op, the input and both values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/ort_api.h"

namespace ortops {

// Element-wise op I/O: N inputs of one dtype and one shape, one output of that shape.
struct ElementwiseIo {
  std::vector<const void*> inputs;  // data (device memory on a device EP); null when empty
  void* output = nullptr;
  std::vector<int64_t> shape;
  size_t count = 0;                       // elements in each tensor
  const OrtMemoryInfo* memory = nullptr;  // where the first input lives
};

// Checks that the inputs named `names` all have `type` and the same shape (the error names both
// shapes), allocates output 0 with that shape and fills `io`.
OrtStatusPtr PrepareElementwise(OrtKernelContext* context, const char* op, const std::vector<const char*>& names,
                                ONNXTensorElementDataType type, ElementwiseIo* io);

// The float attribute `name`, `fallback` when absent; an error naming the op if it has another type.
OrtStatusPtr ReadFloatAttribute(const OrtKernelInfo* info, const char* op, const char* name, float fallback,
                                float* value);

std::string ShapeText(const std::vector<int64_t>& shape);

}  // namespace ortops
