// SoftmaxCrossEntropyLossAndGrad's definition for the kernels (ort_ops/ops/
// softmax_cross_entropy_loss_and_grad.py is the definition of record; tests/ops/test_contract.py checks
// that the library registers what it says):
//   loss = sum over rows not ignored of -log_softmax(logits)[n, target[n]]  (/ their count: "mean")
//   dlogits = w[n] * (softmax(logits) - one_hot(target)),  w[n] = dloss (/ count) or 0 (ignored row)
// The attribute and input checks both kernels share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/attribute_check.h"
#include "common/declared_op.h"
#include "common/element_type.h"
#include "common/op_base.h"
#include "common/tensor_io.h"

namespace ortops::softmax_cross_entropy_loss_and_grad {

constexpr const char* kName = "SoftmaxCrossEntropyLossAndGrad";

struct Attributes {
  int64_t ignore_index = -100;
  bool mean = true;  // reduction "mean" (else "sum")
};

inline OrtStatusPtr ReadAttributes(const OrtKernelInfo* info, Attributes* a) {
  // F.cross_entropy's and ONNX SoftmaxCrossEntropyLoss's arguments this op does not implement
  ORTOPS_RETURN_IF_ERROR(
      RejectUndeclaredAttributes(info, kName, {"ignore_index", "reduction"}, {"label_smoothing", "weight", "axis"}));
  ORTOPS_RETURN_IF_ERROR(ReadIntAttribute(info, kName, "ignore_index", -100, &a->ignore_index));
  std::string reduction;
  ORTOPS_RETURN_IF_ERROR(ReadStringAttribute(info, kName, "reduction", "mean", &reduction));
  if (reduction != "mean" && reduction != "sum") {
    return MakeError(std::string(kName) + ": reduction must be \"mean\" or \"sum\", got \"" + reduction + "\"");
  }
  a->mean = reduction == "mean";
  return nullptr;
}

struct Run {
  TensorView logits, target, dloss;
  int64_t n = 0, c = 0;
};

// Reads logits [N, C], target [N], dloss [] (errors name the inputs and shapes).
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

// One DeclaredOp per float type T for `execution_provider`: (T logits, int64 target, T dloss) -> (T, T).
template <template <typename> class K>
std::vector<OrtCustomOp*> FloatVariants(const char* execution_provider) {
  auto make = [execution_provider](ONNXTensorElementDataType t, KernelFactory factory) -> OrtCustomOp* {
    return new DeclaredOp(kName, execution_provider,
                          {IoSpec{t}, IoSpec{ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64}, IoSpec{t}}, {IoSpec{t}, IoSpec{t}},
                          factory);
  };
  return {make(Float32::kOnnxType, MakeKernel<K<Float32>>), make(Float16::kOnnxType, MakeKernel<K<Float16>>),
          make(BFloat16::kOnnxType, MakeKernel<K<BFloat16>>)};
}

// The registration lists (every op folder provides these).
const std::vector<OrtCustomOp*>& CpuOps();
const std::vector<OrtCustomOp*>& CannOps();

}  // namespace ortops::softmax_cross_entropy_loss_and_grad
