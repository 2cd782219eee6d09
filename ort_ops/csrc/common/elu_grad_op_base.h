// The EluGrad op definition every EP's kernels share: name, dtypes, the alpha attribute.
#pragma once

#include <vector>

#include "common/element_type.h"
#include "common/elu_grad_io.h"
#include "common/ort_api.h"

namespace ortops {

// `Kernel` is constructed from alpha and provides `OrtStatusPtr ComputeV2(OrtKernelContext*)`.
template <typename T, typename Kernel>
struct EluGradOp : Ort::CustomOpBase<EluGradOp<T, Kernel>, Kernel, /*WithStatus=*/true> {
  explicit EluGradOp(const char* execution_provider) : execution_provider_(execution_provider) {}

  OrtStatusPtr CreateKernelV2(const OrtApi&, const OrtKernelInfo* info, void** kernel) const {
    float alpha = 1.0f;
    ORTOPS_RETURN_IF_ERROR(ReadAlpha(info, &alpha));
    *kernel = new Kernel(alpha);
    return nullptr;
  }
  const char* GetName() const { return "EluGrad"; }
  const char* GetExecutionProviderType() const { return execution_provider_; }
  size_t GetInputTypeCount() const { return 2; }
  ONNXTensorElementDataType GetInputType(size_t) const { return T::kOnnxType; }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const { return T::kOnnxType; }

 private:
  const char* execution_provider_;
};

// One EP's EluGrad ops, one per element type; `Kernel<T>` is that EP's kernel.
template <template <typename> class Kernel>
const std::vector<const OrtCustomOp*>& EluGradOps(const char* execution_provider) {
  static const EluGradOp<Float32, Kernel<Float32>> f32{execution_provider};
  static const EluGradOp<Float16, Kernel<Float16>> f16{execution_provider};
  static const EluGradOp<BFloat16, Kernel<BFloat16>> bf16{execution_provider};
  static const std::vector<const OrtCustomOp*> ops{&f32, &f16, &bf16};
  return ops;
}

}  // namespace ortops
