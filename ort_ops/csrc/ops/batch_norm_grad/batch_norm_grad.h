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

#include "common/norm_grad.h"
#include "common/tensor_io.h"
#include "declared/batch_norm_grad.h"

namespace ortops::batch_norm_grad {

using Def = Declaration;
constexpr const char* kName = Declaration::kName;

// One run's tensors, and x's shape as [n, c, l].
struct Run : NormGradRun {
  TensorView var;
  int64_t n = 1, c = 1, l = 1;
};

// Reads the five inputs and checks their shapes against x (errors name the inputs and shapes).
inline OrtStatusPtr GetInputs(OrtKernelContext* context, Run* run) {
  ORTOPS_RETURN_IF_ERROR(run->ReadInputs(context, &run->var));
  const std::vector<int64_t>& shape = run->x.shape;
  if (shape.size() < 2) {
    return MakeError(std::string(kName) + ": x has shape " + ShapeText(shape) +
                     "; expected rank >= 2 [N, C, ...] (channels at axis 1)");
  }
  ORTOPS_RETURN_IF_ERROR(run->CheckDyShape(kName));
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
  return run->AllocateOutputs(context, {run->c});
}

}  // namespace ortops::batch_norm_grad
