// Fetching and checking EluGrad's inputs and allocating its output, shared by every EP's kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/ort_api.h"

namespace ortops {

struct EluGradIo {
  const void* grads = nullptr;
  const void* activations = nullptr;
  void* y = nullptr;
  std::vector<int64_t> shape;
  size_t count = 0;  // elements in each tensor
};

// Checks both inputs have `type` and the same shape (errors name both shapes), allocates `y`
// with that shape, and fills `io`. Data pointers live on whatever device the EP uses.
OrtStatusPtr PrepareEluGrad(OrtKernelContext* context, ONNXTensorElementDataType type,
                            EluGradIo* io);

// Reads the float attribute `alpha`, 1.0 when absent; an error if it has another type.
OrtStatusPtr ReadAlpha(const OrtKernelInfo* info, float* alpha);

}  // namespace ortops
