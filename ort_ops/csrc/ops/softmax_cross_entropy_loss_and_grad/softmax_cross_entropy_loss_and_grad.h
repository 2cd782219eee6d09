// SoftmaxCrossEntropyLossAndGrad for the kernels: ort_ops/ops/softmax_cross_entropy_loss_and_grad.py
// declares it (name, inputs and their types, attributes and defaults, dtypes, providers), the build
// generates `Declaration` from it (w: the class weights, input 3, 1s when absent; t = target[n]):
//   q[n] = (1 - eps) * w[t] * one_hot(t) + eps / C * w                   (eps: label_smoothing)
//   loss = sum over rows not ignored of -sum_c q[n, c] * log_softmax(logits)[n, c]  (/ W: "mean",
//          W = the sum of w[t] over those rows, their count without weights)
//   dlogits = s[n] * (softmax(logits) * sum_c q[n, c] - q[n]),  s[n] = dloss (/ W) or 0 (ignored row)
// The attribute and input checks both kernels share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/tensor_io.h"
#include "declared/softmax_cross_entropy_loss_and_grad.h"

namespace ortops::softmax_cross_entropy_loss_and_grad {

constexpr const char* kName = Declaration::kName;

// The declared attributes checked (ReadAttributes).
struct Attributes {
  int64_t ignore_index = 0;
  bool mean = false;             // reduction "mean" (else "sum")
  float label_smoothing = 0.0f;  // eps in [0, 1]
};

inline OrtStatusPtr ReadAttributes(const OrtKernelInfo* info, Attributes* a) {
  Declaration::Attributes declared;
  ORTOPS_RETURN_IF_ERROR(Declaration::ReadAttributes(info, &declared));
  a->ignore_index = declared.ignore_index;
  const std::string& reduction = declared.reduction;
  if (reduction != "mean" && reduction != "sum") {
    return MakeError(std::string(kName) + ": reduction must be \"mean\" or \"sum\", got \"" + reduction + "\"");
  }
  a->mean = reduction == "mean";
  a->label_smoothing = declared.label_smoothing;
  if (!(a->label_smoothing >= 0.0f && a->label_smoothing <= 1.0f)) {
    return MakeError(std::string(kName) + ": label_smoothing must be in [0, 1], got " +
                     std::to_string(a->label_smoothing));
  }
  return nullptr;
}

struct Run {
  TensorView logits, target, dloss, weight;  // weight: present = false when absent
  int64_t n = 0, c = 0;
};

// Reads logits [N, C], target [N], dloss [], weight [C] if given (errors name the inputs and shapes).
inline OrtStatusPtr GetInputs(OrtKernelContext* context, Run* run) {
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 0, &run->logits));
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 1, &run->target));
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 2, &run->dloss));
  const std::vector<int64_t>& x = run->logits.shape;
  if (x.size() != 2) {
    return MakeError(std::string(kName) + ": logits must be 2-D [N, C], got shape " + ShapeText(x));
  }
  if (run->target.shape != std::vector<int64_t>{x[0]}) {
    return MakeError(std::string(kName) + ": target shape " + ShapeText(run->target.shape) + " is not [N] = [" +
                     std::to_string(x[0]) + "] of logits shape " + ShapeText(x));
  }
  if (!run->dloss.shape.empty()) {
    return MakeError(std::string(kName) + ": dloss must be a scalar (shape []), got shape " +
                     ShapeText(run->dloss.shape));
  }
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 3, &run->weight));
  if (run->weight.present && run->weight.shape != std::vector<int64_t>{x[1]}) {
    return MakeError(std::string(kName) + ": weight shape " + ShapeText(run->weight.shape) + " is not [C] = [" +
                     std::to_string(x[1]) + "] of logits shape " + ShapeText(x));
  }
  run->n = x[0];
  run->c = x[1];
  return nullptr;
}

// The number of rows that count (target != ignore_index), or an error naming the first target
// outside [0, C) that is not ignore_index (the reference's ValueError).
inline OrtStatusPtr CountTargets(const int64_t* target, size_t n, int64_t c, int64_t ignore_index, size_t* count) {
  *count = 0;
  for (size_t r = 0; r < n; ++r) {
    if (target[r] == ignore_index) continue;
    if (target[r] < 0 || target[r] >= c) {
      return MakeError(std::string(kName) + ": target[" + std::to_string(r) + "] = " + std::to_string(target[r]) +
                       " is outside [0, " + std::to_string(c) + ") and is not ignore_index " +
                       std::to_string(ignore_index));
    }
    ++*count;
  }
  return nullptr;
}

}  // namespace ortops::softmax_cross_entropy_loss_and_grad
