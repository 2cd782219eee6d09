// SGDUpdate for the kernels: ort_ops/ops/sgd_update.py declares it (name, inputs and their types,
// the optional buffer, attributes and defaults, providers), the build generates `Declaration` from it:
//   g = grad (+ param * weight_decay); buf = momentum_buffer * scalars[1] + g * scalars[2];
//   g = nesterov ? g + buf * momentum : buf; new_param = param + g * -scalars[0]
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "common/tensor_checks.h"
#include "common/tensor_io.h"
#include "declared/sgd_update.h"

namespace ortops::sgd_update {

constexpr const char* kName = Declaration::kName;
constexpr ONNXTensorElementDataType kF32 = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
constexpr int64_t kScalars = 3;  // lr, momentum for this step, gradient scale for this step

// The declared attributes checked (ReadAttributes).
struct Attributes {
  float momentum = 0.0f;
  float dampening = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};

// The name of the node's input (`input`) or output `index`: "" when omitted or past the end.
inline OrtStatusPtr NodeIoName(const OrtKernelInfo* info, bool input, size_t index, std::string* name) {
  const OrtApi& api = Api();
  size_t count = 0;
  ORTOPS_RETURN_IF_ERROR(input ? api.KernelInfo_GetInputCount(info, &count)
                               : api.KernelInfo_GetOutputCount(info, &count));
  name->clear();
  if (index >= count) return nullptr;
  size_t size = 0;
  ORTOPS_RETURN_IF_ERROR(input ? api.KernelInfo_GetInputName(info, index, nullptr, &size)
                               : api.KernelInfo_GetOutputName(info, index, nullptr, &size));
  name->assign(size, '\0');
  ORTOPS_RETURN_IF_ERROR(input ? api.KernelInfo_GetInputName(info, index, name->data(), &size)
                               : api.KernelInfo_GetOutputName(info, index, name->data(), &size));
  name->resize(size > 0 ? size - 1 : 0);  // size counts the terminating null
  return nullptr;
}

// momentum_buffer (input 2) and new_momentum_buffer (output 1) are the node's exactly when
// momentum != 0 (with momentum 0 there is no buffer to produce): checked when the session is created.
inline OrtStatusPtr CheckBufferIo(const OrtKernelInfo* info, const Attributes& a) {
  const bool with_momentum = a.momentum != 0.0f;
  std::string buffer, new_buffer;
  ORTOPS_RETURN_IF_ERROR(NodeIoName(info, true, 2, &buffer));
  ORTOPS_RETURN_IF_ERROR(NodeIoName(info, false, 1, &new_buffer));
  const std::string op = kName;
  if (with_momentum == buffer.empty()) {
    return MakeError(op + ": momentum_buffer must be given exactly when momentum != 0 (momentum " +
                     std::to_string(a.momentum) + ", momentum_buffer " + (buffer.empty() ? "absent" : "given") + ")");
  }
  if (!with_momentum && !new_buffer.empty()) {
    return MakeError(op + ": output new_momentum_buffer ('" + new_buffer +
                     "') is produced only when momentum != 0; momentum is 0: omit the output");
  }
  if (with_momentum && new_buffer.empty()) {
    return MakeError(op + ": momentum " + std::to_string(a.momentum) + " != 0 needs the new_momentum_buffer output");
  }
  return nullptr;
}

// Reads the attributes and rejects what torch.optim.SGD rejects (the reference's check_attributes),
// then the optional buffer input and output against momentum (CheckBufferIo).
inline OrtStatusPtr ReadAttributes(const OrtKernelInfo* info, Attributes* a) {
  Declaration::Attributes declared;
  ORTOPS_RETURN_IF_ERROR(Declaration::ReadAttributes(info, &declared));
  a->momentum = declared.momentum;
  a->dampening = declared.dampening;
  a->weight_decay = declared.weight_decay;
  const int64_t nesterov = declared.nesterov;
  const std::string op = kName;
  if (!(a->momentum >= 0.0f)) return MakeError(op + ": momentum must be >= 0, got " + std::to_string(a->momentum));
  if (!(a->weight_decay >= 0.0f)) {
    return MakeError(op + ": weight_decay must be >= 0, got " + std::to_string(a->weight_decay));
  }
  if (!std::isfinite(a->dampening)) {
    return MakeError(op + ": dampening must be finite, got " + std::to_string(a->dampening));
  }
  if (nesterov != 0 && nesterov != 1)
    return MakeError(op + ": nesterov must be 0 or 1, got " + std::to_string(nesterov));
  a->nesterov = nesterov == 1;
  if (a->nesterov && (a->momentum == 0.0f || a->dampening != 0.0f)) {
    return MakeError(op + ": nesterov=1 needs momentum > 0 and dampening = 0, got momentum " +
                     std::to_string(a->momentum) + ", dampening " + std::to_string(a->dampening));
  }
  return CheckBufferIo(info, *a);
}

// One node's inputs (checked) and outputs (allocated).
struct Io {
  TensorView param, grad, buffer, scalars;
  void* new_param = nullptr;
  void* new_buffer = nullptr;  // momentum != 0 only
  size_t count = 0;
};

inline OrtStatusPtr PrepareIo(OrtKernelContext* context, const Attributes& a, Io* io) {
  ORTOPS_RETURN_IF_ERROR(ReadChecked(context, 0, kName, "param", kF32, &io->param));
  const std::vector<int64_t>& shape = io->param.shape;
  ORTOPS_RETURN_IF_ERROR(ReadChecked(context, 1, kName, "grad", kF32, &io->grad, &shape, "param"));
  ORTOPS_RETURN_IF_ERROR(GetInput(context, 2, &io->buffer));
  const bool with_momentum = a.momentum != 0.0f;
  if (with_momentum != io->buffer.present) {
    return MakeError(std::string(kName) + ": momentum_buffer must be given exactly when momentum != 0 (momentum " +
                     std::to_string(a.momentum) + ", momentum_buffer " + (io->buffer.present ? "given" : "absent") +
                     ")");
  }
  if (with_momentum) {
    ORTOPS_RETURN_IF_ERROR(CheckTensor(kName, "momentum_buffer", io->buffer, kF32, &shape, "param"));
  }
  ORTOPS_RETURN_IF_ERROR(ReadChecked(context, 3, kName, "scalars", kF32, &io->scalars));
  if (io->scalars.shape != std::vector<int64_t>{kScalars}) {
    return MakeError(std::string(kName) + ": scalars must have shape [3] (lr, momentum, gradient scale), got " +
                     ShapeText(io->scalars.shape));
  }
  io->count = io->param.count;
  ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, 0, shape, &io->new_param));
  if (with_momentum) {
    bool produced = false;
    ORTOPS_RETURN_IF_ERROR(AllocateOptionalOutput(context, 1, shape, &io->new_buffer, &produced));
    if (!produced) return MakeError(std::string(kName) + ": momentum != 0 needs the new_momentum_buffer output");
  }
  return nullptr;
}

}  // namespace ortops::sgd_update
