// An OrtCustomOp described by data rather than by a class per op: name, EP, the element type of
// every input and output, which inputs are optional or read from CPU memory, and a factory for
// its kernel. For ops whose inputs do not all share one type (optimizer updates with float64
// scalars, placed ONNX ops such as Equal or Cast, shape inputs kept on the host).
#pragma once

#include <string>
#include <vector>

#include "common/ort_api.h"

namespace ortops {

// One input or output of a kernel variant.
struct IoSpec {
  ONNXTensorElementDataType type;
  bool optional = false;
  // Inputs only: the kernel reads it in CPU memory (shapes, axes): ORT keeps it on the host
  // (an initializer is placed there once, no copy per run).
  bool on_cpu = false;
};

// Kernels of declared ops: constructed by the op's factory, one per node.
struct Kernel {
  virtual ~Kernel() = default;
  virtual OrtStatusPtr ComputeV2(OrtKernelContext* context) const = 0;
};

class DeclaredOp;
// Builds the kernel of one node (reads and checks its attributes); an error fails session creation.
using KernelFactory = OrtStatusPtr (*)(const OrtKernelInfo* info, const DeclaredOp& op, Kernel** kernel);

class DeclaredOp : public Ort::CustomOpBase<DeclaredOp, Kernel, /*WithStatus=*/true> {
 public:
  DeclaredOp(const char* name, const char* execution_provider, std::vector<IoSpec> inputs, std::vector<IoSpec> outputs,
             KernelFactory factory)
      : name_(name),
        execution_provider_(execution_provider),
        inputs_(std::move(inputs)),
        outputs_(std::move(outputs)),
        factory_(factory) {}

  OrtStatusPtr CreateKernelV2(const OrtApi&, const OrtKernelInfo* info, void** kernel) const {
    Kernel* made = nullptr;
    ORTOPS_RETURN_IF_ERROR(factory_(info, *this, &made));
    *kernel = made;
    return nullptr;
  }
  const char* GetName() const { return name_; }
  const char* GetExecutionProviderType() const { return execution_provider_; }
  size_t GetInputTypeCount() const { return inputs_.size(); }
  ONNXTensorElementDataType GetInputType(size_t i) const { return inputs_[i].type; }
  OrtCustomOpInputOutputCharacteristic GetInputCharacteristic(size_t i) const {
    return inputs_[i].optional ? INPUT_OUTPUT_OPTIONAL : INPUT_OUTPUT_REQUIRED;
  }
  OrtMemType GetInputMemoryType(size_t i) const { return inputs_[i].on_cpu ? OrtMemTypeCPUInput : OrtMemTypeDefault; }
  size_t GetOutputTypeCount() const { return outputs_.size(); }
  ONNXTensorElementDataType GetOutputType(size_t i) const { return outputs_[i].type; }
  OrtCustomOpInputOutputCharacteristic GetOutputCharacteristic(size_t i) const {
    return outputs_[i].optional ? INPUT_OUTPUT_OPTIONAL : INPUT_OUTPUT_REQUIRED;
  }

  const std::vector<IoSpec>& inputs() const { return inputs_; }
  const std::vector<IoSpec>& outputs() const { return outputs_; }

 private:
  const char* name_;
  const char* execution_provider_;
  std::vector<IoSpec> inputs_, outputs_;
  KernelFactory factory_;
};

// A factory for kernels constructed from (info, op) that report errors through `*status`.
template <typename K>
OrtStatusPtr MakeKernel(const OrtKernelInfo* info, const DeclaredOp& op, Kernel** kernel) {
  OrtStatusPtr status = nullptr;
  auto* made = new K(info, op, &status);
  if (status != nullptr) {
    delete made;
    return status;
  }
  *kernel = made;
  return nullptr;
}

}  // namespace ortops
