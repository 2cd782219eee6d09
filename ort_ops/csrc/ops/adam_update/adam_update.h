// AdamUpdate for the kernels: ort_ops/ops/adam_update.py declares it (name, inputs and their types,
// the optional cann_scalars, attributes and defaults, providers), the build generates `Declaration`:
//   float64: step = -lr / (1 - beta1^(t-1) * beta1), bc2_sqrt = sqrt(1 - beta2^(t-1) * beta2)
//   cann_scalars (optional input 5, float32): [lr*k1*sqrt(k2*bc2), beta1^(t-1), eps*sqrt(k2*bc2)], what
//   the CANN kernel hands ApplyAdamW (Compensations below; the CPU kernel checks it)
//   float32: g = grad (+ param * wd); m += (g - m) * (1 - beta1); v = v * beta2 + g * (1 - beta2) * g;
//            new_param = param + m / (sqrt(v) / bc2_sqrt + eps) * step
#pragma once

#include <charconv>
#include <string>
#include <utility>
#include <vector>

#include "common/tensor_checks.h"
#include "common/tensor_io.h"
#include "declared/adam_update.h"

namespace ortops::adam_update {

constexpr const char* kName = Declaration::kName;
constexpr ONNXTensorElementDataType kF32 = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
constexpr ONNXTensorElementDataType kF64 = ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
constexpr int64_t kScalars = 3;  // lr, beta1^(t-1), beta2^(t-1)

// The float64 a float attribute stands for: the double nearest to the shortest decimal that
// rounds to its float32 value (0.9f -> 0.9), as ort_ops.ops.adam_update.attribute_double.
inline double AttributeDouble(float value) {
  char text[64];
  const std::to_chars_result printed = std::to_chars(text, text + sizeof text, value);
  double parsed = static_cast<double>(value);
  std::from_chars(text, printed.ptr, parsed);
  return parsed;
}

// The declared attributes (beta1, beta2, eps, weight_decay) checked, and values derived from them.
struct Attributes : Declaration::Attributes {
  double beta1_d = 0.0, beta2_d = 0.0;  // AttributeDouble of the betas
};

// k1 = float32(1 - beta1) / (1 - float32(beta1)), k2 = (1 - float32(beta2)) / float32(1 - beta2):
// CANN's ApplyAdamW forms beta - 1 from the float32 beta, PyTorch rounds 1 - beta to float32; the
// factors between their moments (ort_ops.ops.adam_update.compensations).
struct Compensations {
  double k1, k2;
};
inline Compensations CompensationsOf(const Attributes& a) {
  return {static_cast<double>(static_cast<float>(1.0 - a.beta1_d)) / (1.0 - static_cast<double>(a.beta1)),
          (1.0 - static_cast<double>(a.beta2)) / static_cast<double>(static_cast<float>(1.0 - a.beta2_d))};
}

// What cann_scalars may be off its float64 values: relative 2^-21 (4 to 8 float32 ulps), of at least float32's
// smallest normal (ort_ops.ops.adam_update.CANN_SCALARS_RTOL, CANN_SCALARS_FLOOR).
constexpr double kCannScalarsRtol = 1.0 / (1 << 21);
constexpr double kCannScalarsFloor = 1.1754943508222875e-38;  // 2^-126

// Reads the attributes and rejects what torch.optim.Adam rejects (the reference's check_attributes).
inline OrtStatusPtr ReadAttributes(const OrtKernelInfo* info, Attributes* a) {
  ORTOPS_RETURN_IF_ERROR(Declaration::ReadAttributes(info, a));
  const std::string op = kName;
  for (const auto& [name, beta] : {std::pair{"beta1", a->beta1}, std::pair{"beta2", a->beta2}}) {
    if (!(beta >= 0.0f && beta < 1.0f)) {
      return MakeError(op + ": " + name + " must be in [0, 1), got " + std::to_string(beta));
    }
  }
  if (!(a->eps >= 0.0f)) return MakeError(op + ": eps must be >= 0, got " + std::to_string(a->eps));
  if (!(a->weight_decay >= 0.0f)) {
    return MakeError(op + ": weight_decay must be >= 0, got " + std::to_string(a->weight_decay));
  }
  a->beta1_d = AttributeDouble(a->beta1);
  a->beta2_d = AttributeDouble(a->beta2);
  return nullptr;
}

// One node's inputs (checked) and outputs (allocated).
struct Io {
  TensorView param, grad, exp_avg, exp_avg_sq, scalars, cann_scalars;  // cann_scalars.present: given
  void* new_param = nullptr;
  void* new_exp_avg = nullptr;
  void* new_exp_avg_sq = nullptr;
  size_t count = 0;
};

inline OrtStatusPtr PrepareIo(OrtKernelContext* context, Io* io) {
  ORTOPS_RETURN_IF_ERROR(ReadChecked(context, 0, kName, "param", kF32, &io->param));
  const std::vector<int64_t>& shape = io->param.shape;
  ORTOPS_RETURN_IF_ERROR(ReadChecked(context, 1, kName, "grad", kF32, &io->grad, &shape, "param"));
  ORTOPS_RETURN_IF_ERROR(ReadChecked(context, 2, kName, "exp_avg", kF32, &io->exp_avg, &shape, "param"));
  ORTOPS_RETURN_IF_ERROR(ReadChecked(context, 3, kName, "exp_avg_sq", kF32, &io->exp_avg_sq, &shape, "param"));
  ORTOPS_RETURN_IF_ERROR(ReadChecked(context, 4, kName, "scalars", kF64, &io->scalars));
  if (io->scalars.shape != std::vector<int64_t>{kScalars}) {
    return MakeError(std::string(kName) + ": scalars must have shape [3] (lr, beta1^(t-1), beta2^(t-1)), got " +
                     ShapeText(io->scalars.shape));
  }
  size_t inputs = 0;
  ORTOPS_RETURN_IF_ERROR(Api().KernelContext_GetInputCount(context, &inputs));
  if (inputs > 5) ORTOPS_RETURN_IF_ERROR(GetInput(context, 5, &io->cann_scalars));
  if (io->cann_scalars.present) {
    ORTOPS_RETURN_IF_ERROR(CheckTensor(kName, "cann_scalars", io->cann_scalars, kF32));
    if (io->cann_scalars.shape != std::vector<int64_t>{kScalars}) {
      return MakeError(std::string(kName) +
                       ": cann_scalars must have shape [3] (lr*k1*sqrt(k2*bc2), beta1^(t-1), eps*sqrt(k2*bc2)), got " +
                       ShapeText(io->cann_scalars.shape));
    }
  }
  io->count = io->param.count;
  ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, 0, shape, &io->new_param));
  ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, 1, shape, &io->new_exp_avg));
  return AllocateOutput(context, 2, shape, &io->new_exp_avg_sq);
}

}  // namespace ortops::adam_update
