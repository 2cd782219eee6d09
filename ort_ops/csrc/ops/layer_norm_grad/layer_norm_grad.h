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

#include "common/tensor_io.h"
#include "declared/layer_norm_grad.h"

namespace ortops::layer_norm_grad {

using Def = Declaration;
constexpr const char* kName = Declaration::kName;

// One run's tensors, and x's shape around the axis.
struct Run {
  TensorView dy, x, mean, rstd, scale;
  std::vector<int64_t> scale_shape;  // x's dims from the axis on (dscale's and dbias's shape)
  int64_t rows = 1, m = 1;
  void* dx = nullptr;
  void* dscale = nullptr;  // nullptr: the node does not produce it
  void* dbias = nullptr;
};

// Reads the five inputs and checks their shapes against x and axis (errors name the inputs, shapes
// and axis).
inline OrtStatusPtr GetInputs(OrtKernelContext* context, int64_t axis, Run* run) {
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 0, &run->dy));
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 1, &run->x));
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 2, &run->mean));
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 3, &run->rstd));
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 4, &run->scale));
  const std::vector<int64_t>& shape = run->x.shape;
  const auto rank = static_cast<int64_t>(shape.size());
  if (axis < -rank || axis >= rank) {
    return MakeError(std::string(kName) + ": axis " + std::to_string(axis) + " is out of range for x of shape " +
                     ShapeText(shape));
  }
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (run->dy.shape != shape) {
    return MakeError(std::string(kName) + ": dy shape " + ShapeText(run->dy.shape) + " differs from x shape " +
                     ShapeText(shape));
  }
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
  ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, 0, run->x.shape, &run->dx));
  bool produced = false;
  ORTOPS_RETURN_IF_ERROR(AllocateOptionalOutput(context, 1, run->scale_shape, &run->dscale, &produced));
  return AllocateOptionalOutput(context, 2, run->scale_shape, &run->dbias, &produced);
}

}  // namespace ortops::layer_norm_grad
