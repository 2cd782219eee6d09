// LayerNormGrad for the kernels: ort_ops/ops/layer_norm_grad.py declares it (name, inputs, the axis
// attribute and its default, dtypes, providers), the build generates `Declaration` from it:
//   xhat = (x - mean) * rstd, g = dy * scale,
//   dx = (g - (sum(g) / M + xhat * sum(g * xhat) / M)) * rstd            per row of M elements
//   dscale = sum over rows of dy * xhat, dbias = sum over rows of dy.
// The input checks both kernels share: x viewed as [rows, M] around the axis (the normalised dims
// are the trailing ones, so a row is M contiguous elements).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/norm_grad.h"
#include "common/tensor_io.h"
#include "declared/layer_norm_grad.h"

namespace ortops::layer_norm_grad {

using Def = Declaration;
constexpr const char* kName = Declaration::kName;

// One run's tensors, and x's shape around the axis.
struct Run : NormGradRun {
  TensorView rstd;
  std::vector<int64_t> scale_shape;  // x's dims from the axis on (dscale's and dbias's shape)
  int64_t rows = 1, m = 1;
};

// Reads the five inputs and checks their shapes against x and axis (errors name the inputs, shapes
// and axis).
inline OrtStatusPtr GetInputs(OrtKernelContext* context, int64_t axis, Run* run) {
  ORTOPS_RETURN_IF_ERROR(run->ReadInputs(context, &run->rstd));
  const std::vector<int64_t>& shape = run->x.shape;
  const auto rank = static_cast<int64_t>(shape.size());
  if (axis < -rank || axis >= rank) {
    return MakeError(std::string(kName) + ": axis " + std::to_string(axis) + " is out of range for x of shape " +
                     ShapeText(shape));
  }
  const int64_t a = axis < 0 ? axis + rank : axis;
  ORTOPS_RETURN_IF_ERROR(run->CheckDyShape(kName));
  std::vector<int64_t> stats(shape.begin(), shape.begin() + a);
  stats.resize(shape.size(), 1);
  const std::pair<const char*, const TensorView*> stat_inputs[] = {{"mean", &run->mean}, {"inv_std_dev", &run->rstd}};
  for (const auto& [name, view] : stat_inputs) {
    if (view->shape != stats) {
      return MakeError(std::string(kName) + ": " + name + " shape " + ShapeText(view->shape) + " is not " +
                       ShapeText(stats) + " (x " + ShapeText(shape) + " with the dims from axis " + std::to_string(a) +
                       " set to 1)");
    }
  }
  run->scale_shape.assign(shape.begin() + a, shape.end());
  if (run->scale.shape != run->scale_shape) {
    return MakeError(std::string(kName) + ": scale shape " + ShapeText(run->scale.shape) +
                     " is not x's dims from axis " + std::to_string(a) + ", " + ShapeText(run->scale_shape));
  }
  run->rows = run->m = 1;
  for (int64_t d = 0; d < rank; ++d) (d < a ? run->rows : run->m) *= shape[static_cast<size_t>(d)];
  return nullptr;
}

// GetInputs, then allocates dx and the dscale / dbias the node produces (left null when it does
// not, and when x has no element: then every output is empty).
inline OrtStatusPtr Prepare(OrtKernelContext* context, int64_t axis, Run* run) {
  ORTOPS_RETURN_IF_ERROR(GetInputs(context, axis, run));
  return run->AllocateOutputs(context, run->scale_shape);
}

}  // namespace ortops::layer_norm_grad
