// EluGrad's definition for the kernels (ort_ops/ops/elu_grad.py is the definition of record;
// tests/ops/test_contract.py checks that the library registers what it says):
//   y = activations < 0 ? (activations + alpha) * grads : grads
#pragma once

#include <vector>

#include "common/attribute_check.h"
#include "common/tensor_io.h"

namespace ortops::elu_grad {

struct Def {
  static constexpr const char* kName = "EluGrad";
  static constexpr size_t kInputs = 2;
  static constexpr size_t kOutputs = 1;
  struct Attributes {
    float alpha = 1.0f;
  };
  static OrtStatusPtr ReadAttributes(const OrtKernelInfo* info, Attributes* attributes) {
    // CANN EluGradV2's attributes, which this op does not take
    ORTOPS_RETURN_IF_ERROR(RejectUndeclaredAttributes(info, kName, {"alpha"}, {"scale", "input_scale", "is_result"}));
    return ReadFloatAttribute(info, kName, "alpha", 1.0f, &attributes->alpha);
  }
  static const std::vector<const char*>& InputNames() {
    static const std::vector<const char*> names{"grads", "activations"};
    return names;
  }
};

// The registration lists (ort_ops/csrc/ops/CMakeLists: every op folder provides these).
const std::vector<OrtCustomOp*>& CpuOps();
const std::vector<OrtCustomOp*>& CannOps();

}  // namespace ortops::elu_grad
