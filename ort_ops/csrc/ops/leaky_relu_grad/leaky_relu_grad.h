// LeakyReluGrad's definition for the kernels (ort_ops/ops/leaky_relu_grad.py is the definition of
// record; tests/ops/test_contract.py checks that the library registers what it says):
//   backprops = features > 0 ? gradients : gradients * negative_slope
#pragma once

#include <vector>

#include "common/attribute_check.h"
#include "common/tensor_io.h"

namespace ortops::leaky_relu_grad {

struct Def {
  static constexpr const char* kName = "LeakyReluGrad";
  static constexpr size_t kInputs = 2;
  static constexpr size_t kOutputs = 1;
  struct Attributes {
    float negative_slope = 0.0f;
  };
  static OrtStatusPtr ReadAttributes(const OrtKernelInfo* info, Attributes* attributes) {
    // ONNX LeakyRelu's and TensorFlow LeakyReluGrad's name of the slope, which this op does not take
    ORTOPS_RETURN_IF_ERROR(RejectUndeclaredAttributes(info, kName, {"negative_slope"}, {"alpha", "self_is_result"}));
    return ReadFloatAttribute(info, kName, "negative_slope", 0.0f, &attributes->negative_slope);
  }
  static const std::vector<const char*>& InputNames() {
    static const std::vector<const char*> names{"gradients", "features"};
    return names;
  }
};

// The registration lists (ort_ops/csrc/ops/CMakeLists: every op folder provides these).
const std::vector<OrtCustomOp*>& CpuOps();
const std::vector<OrtCustomOp*>& CannOps();

}  // namespace ortops::leaky_relu_grad
