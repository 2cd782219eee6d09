// EluGrad CPU kernels (float32, float16, bfloat16) for the CPU execution provider.
#pragma once

#include <vector>

#include "common/ort_api.h"

namespace ortops::cpu {

// Every CPU op of the library, in registration order; the objects live for the process.
const std::vector<const OrtCustomOp*>& Ops();

}  // namespace ortops::cpu
