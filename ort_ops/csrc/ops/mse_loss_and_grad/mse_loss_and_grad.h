// MseLossAndGrad for the kernels: ort_ops/ops/mse_loss_and_grad.py declares it (name, inputs,
// the reduction attribute and its default, dtypes, providers), the build generates `Declaration`:
//   d = prediction - target;  loss = sum(d * d) (* 1 / N for "mean");
//   dprediction = (d * cof) * dloss,  cof = float32(2 / N) ("mean") or 2 ("sum").
// The attribute and input checks both kernels share, and cof.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/tensor_io.h"
#include "declared/mse_loss_and_grad.h"

namespace ortops::mse_loss_and_grad {

constexpr const char* kName = Declaration::kName;

struct Attributes {
  bool mean = true;  // reduction "mean" (else "sum")
};

inline OrtStatusPtr ReadAttributes(const OrtKernelInfo* info, Attributes* a) {
  Declaration::Attributes declared;
  ORTOPS_RETURN_IF_ERROR(Declaration::ReadAttributes(info, &declared));
  const std::string& reduction = declared.reduction;
  if (reduction != "mean" && reduction != "sum") {
    return MakeError(std::string(kName) + ": reduction must be \"mean\" or \"sum\", got \"" + reduction + "\"");
  }
  a->mean = reduction == "mean";
  return nullptr;
}

struct Run {
  TensorView prediction, target, dloss;
  void* loss = nullptr;         // output 0, []
  void* dprediction = nullptr;  // output 1, prediction's shape (null when empty)
};

// Reads prediction, target (prediction's shape) and dloss [] (errors name the inputs and shapes).
inline OrtStatusPtr GetInputs(OrtKernelContext* context, Run* run) {
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 0, &run->prediction));
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 1, &run->target));
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 2, &run->dloss));
  if (run->target.shape != run->prediction.shape) {
    return MakeError(std::string(kName) + ": target shape " + ShapeText(run->target.shape) +
                     " differs from prediction shape " + ShapeText(run->prediction.shape) +
                     " (broadcasting is not supported)");
  }
  if (!run->dloss.shape.empty()) {
    return MakeError(std::string(kName) + ": dloss must be a scalar (shape []), got shape " +
                     ShapeText(run->dloss.shape));
  }
  return nullptr;
}

// GetInputs, then allocates both outputs.
inline OrtStatusPtr Prepare(OrtKernelContext* context, Run* run) {
  ORTOPS_RETURN_IF_ERROR(GetInputs(context, run));
  ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, 0, {}, &run->loss));
  return AllocateOutput(context, 1, run->prediction.shape, &run->dprediction);
}

// cof of `count` elements: 2 / count in double rounded once to float32 ("mean"), else 2 (CANN's
// MseLossGrad tiling computes it so).
inline float GradientScale(bool mean, size_t count) {
  return mean ? static_cast<float>(2.0 / static_cast<double>(count)) : 2.0f;
}

}  // namespace ortops::mse_loss_and_grad
