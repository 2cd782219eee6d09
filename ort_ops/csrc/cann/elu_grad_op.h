// EluGrad kernels (float32, float16, bfloat16) for ONNX Runtime's CANN execution provider.
#pragma once

#include <vector>

#include "common/ort_api.h"

namespace ortops::cann {

// Every CANN op of the library, in registration order; the objects live for the process.
const std::vector<const OrtCustomOp*>& Ops();

}  // namespace ortops::cann
