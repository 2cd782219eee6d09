// BatchNormGrad for the kernels: ort_ops/ops/batch_norm_grad.py declares it (name, inputs, the epsilon
// attribute and its default, dtypes, providers), the build generates `Declaration` from it:
//   per channel c of x [N, C, *spatial] (M = N * prod(spatial) elements):
//   rstd = 1 / sqrt(var + epsilon), xhat = (x - mean) * rstd,
//   dx = scale * rstd * (dy - sum(dy) / M - xhat * sum(dy * xhat) / M),
//   dscale = sum(dy * xhat), dbias = sum(dy).
// The input checks both kernels share: x viewed as [N, C, L] (L = prod(spatial); one channel of one
// sample is L contiguous elements).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/tensor_io.h"
#include "declared/batch_norm_grad.h"

namespace ortops::batch_norm_grad {

using Def = Declaration;
constexpr const char* kName = Declaration::kName;

// One run's tensors, and x's shape as [n, c, l].
struct Run {
  TensorView dy, x, mean, var, scale;
  int64_t n = 1, c = 1, l = 1;
  void* dx = nullptr;
  void* dscale = nullptr;  // nullptr: the node does not produce it
  void* dbias = nullptr;
};

// Reads the five inputs and checks their shapes against x (errors name the inputs and shapes).
inline OrtStatusPtr GetInputs(OrtKernelContext* context, Run* run) {
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 0, &run->dy));
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 1, &run->x));
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 2, &run->mean));
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 3, &run->var));
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 4, &run->scale));
  const std::vector<int64_t>& shape = run->x.shape;
  if (shape.size() < 2) {
    return MakeError(std::string(kName) + ": x has shape " + ShapeText(shape) +
                     "; expected rank >= 2 [N, C, ...] (channels at axis 1)");
  }
  if (run->dy.shape != shape) {
    return MakeError(std::string(kName) + ": dy shape " + ShapeText(run->dy.shape) + " differs from x shape " +
                     ShapeText(shape));
  }
  const int64_t c = shape[1];
  const std::vector<int64_t> flat{c};
  std::vector<int64_t> column(shape.size(), 1);
  column[1] = c;
  const std::pair<const char*, const TensorView*> stats[] = {{"mean", &run->mean}, {"var", &run->var}};
  for (const auto& [name, view] : stats) {
    if (view->shape != flat && view->shape != column) {
      return MakeError(std::string(kName) + ": " + name + " shape " + ShapeText(view->shape) + " is neither " +
                       ShapeText(flat) + " nor " + ShapeText(column) + " (x " + ShapeText(shape) +
                       ": C channels at axis 1)");
    }
  }
  if (run->scale.shape != flat) {
    return MakeError(std::string(kName) + ": scale shape " + ShapeText(run->scale.shape) + " is not " +
                     ShapeText(flat) + " (x " + ShapeText(shape) + ": C channels at axis 1)");
  }
  run->n = shape[0];
  run->c = c;
  run->l = 1;
  for (size_t d = 2; d < shape.size(); ++d) run->l *= shape[d];
  return nullptr;
}

// GetInputs, then allocates dx and the dscale / dbias the node produces (left null when it does not).
inline OrtStatusPtr Prepare(OrtKernelContext* context, Run* run) {
  ORTOPS_RETURN_IF_ERROR(GetInputs(context, run));
  ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, 0, run->x.shape, &run->dx));
  const std::vector<int64_t> flat{run->c};
  bool produced = false;
  ORTOPS_RETURN_IF_ERROR(AllocateOptionalOutput(context, 1, flat, &run->dscale, &produced));
  return AllocateOptionalOutput(context, 2, flat, &run->dbias, &produced);
}

}  // namespace ortops::batch_norm_grad
