// Checks of one input against what an op expects (dtype, shape): errors name the op, the input,
// the expected and the actual value. For ops whose inputs are not one elementwise group.
#pragma once

#include <string>
#include <vector>

#include "common/element_type.h"
#include "common/tensor_io.h"

namespace ortops {

// `view` must be present and have `type`; with `shape`, also that shape (`shape_of` names the
// input whose shape it is, for the message).
inline OrtStatusPtr CheckTensor(const char* op, const char* name, const TensorView& view,
                                ONNXTensorElementDataType type, const std::vector<int64_t>* shape = nullptr,
                                const char* shape_of = nullptr) {
  if (!view.present) return MakeError(std::string(op) + ": input " + name + " is missing");
  if (view.type != type) {
    return MakeError(std::string(op) + ": " + name + " has dtype " + ElementTypeName(view.type) + ", expected " +
                     ElementTypeName(type));
  }
  if (shape != nullptr && view.shape != *shape) {
    return MakeError(std::string(op) + ": " + shape_of + " shape " + ShapeText(*shape) + " differs from " + name +
                     " shape " + ShapeText(view.shape) + "; they must be equal");
  }
  return nullptr;
}

// The input `index` of `op`, checked as CheckTensor does.
inline OrtStatusPtr ReadChecked(OrtKernelContext* context, size_t index, const char* op, const char* name,
                                ONNXTensorElementDataType type, TensorView* view,
                                const std::vector<int64_t>* shape = nullptr, const char* shape_of = nullptr) {
  ORTOPS_RETURN_IF_ERROR(GetInput(context, index, view));
  return CheckTensor(op, name, *view, type, shape, shape_of);
}

}  // namespace ortops
