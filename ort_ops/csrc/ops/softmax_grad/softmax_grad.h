// SoftmaxGrad for the kernels: ort_ops/ops/softmax_grad.py declares it (name, inputs, the axis
// attribute and its default, dtypes, providers), the build generates `Declaration` from it:
//   grad_x = t - sum(t, axis) * softmax,  t = grad_softmax * softmax.
// The input checks both kernels share: the inputs viewed as [outer, n, inner] around the axis.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/tensor_io.h"
#include "declared/softmax_grad.h"

namespace ortops::softmax_grad {

using Def = Declaration;
constexpr const char* kName = Declaration::kName;

// One run's tensors, and their shape around the axis.
struct Run {
  TensorView dy, y;
  int64_t outer = 1, n = 1, inner = 1;
};

// Reads grad_softmax and softmax, checks they have one shape and that axis is one of its dims
// (errors name the inputs, shapes and axis).
inline OrtStatusPtr GetInputs(OrtKernelContext* context, int64_t axis, Run* run) {
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 0, &run->dy));
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 1, &run->y));
  const std::vector<int64_t>& shape = run->y.shape;
  if (run->dy.shape != shape) {
    return MakeError(std::string(kName) + ": grad_softmax shape " + ShapeText(run->dy.shape) +
                     " differs from softmax shape " + ShapeText(shape));
  }
  const auto rank = static_cast<int64_t>(shape.size());
  if (axis < -rank || axis >= rank) {
    return MakeError(std::string(kName) + ": axis " + std::to_string(axis) + " is out of range for inputs of shape " +
                     ShapeText(shape));
  }
  const int64_t a = axis < 0 ? axis + rank : axis;
  run->outer = run->n = run->inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < a ? run->outer : d == a ? run->n : run->inner) *= shape[static_cast<size_t>(d)];
  return nullptr;
}

}  // namespace ortops::softmax_grad
