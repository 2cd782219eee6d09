// The OrtCustomOp every op and EP shares: name, dtypes, arity and attributes come from the op's
// definition (`Def`, the op's own header), the computation from the EP's `Kernel<T>`.
//
// A `Def` provides:
//   static constexpr const char* kName;          the op type
//   static constexpr size_t kInputs, kOutputs;   arity (every input and output has type T)
//   struct Attributes;                           the attribute values a kernel gets
//   static OrtStatusPtr ReadAttributes(const OrtKernelInfo*, Attributes*);
// A `Kernel<T>` is constructed from `const Def::Attributes&` and provides
//   OrtStatusPtr Init();                          checks at kernel (session) creation, e.g. the SoC
//   OrtStatusPtr ComputeV2(OrtKernelContext*) const.
#pragma once

#include <vector>

#include "common/element_type.h"
#include "common/ort_api.h"

namespace ortops {

template <typename Def, typename T, typename Kernel>
struct TypedOp : Ort::CustomOpBase<TypedOp<Def, T, Kernel>, Kernel, /*WithStatus=*/true> {
  explicit TypedOp(const char* execution_provider) : execution_provider_(execution_provider) {}

  OrtStatusPtr CreateKernelV2(const OrtApi&, const OrtKernelInfo* info, void** kernel) const {
    typename Def::Attributes attributes;
    ORTOPS_RETURN_IF_ERROR(Def::ReadAttributes(info, &attributes));
    auto* made = new Kernel(attributes);
    if (OrtStatusPtr status = made->Init()) {
      delete made;
      return status;
    }
    *kernel = made;
    return nullptr;
  }
  const char* GetName() const { return Def::kName; }
  const char* GetExecutionProviderType() const { return execution_provider_; }
  size_t GetInputTypeCount() const { return Def::kInputs; }
  ONNXTensorElementDataType GetInputType(size_t) const { return T::kOnnxType; }
  size_t GetOutputTypeCount() const { return Def::kOutputs; }
  ONNXTensorElementDataType GetOutputType(size_t) const { return T::kOnnxType; }

 private:
  const char* execution_provider_;
};

// One EP's ops of `Def`, one per element type (float32, float16, bfloat16); `Kernel<T>` is the
// EP's kernel, named after the EP (CpuKernel, CannKernel): two kernels of one name in one op
// namespace, even in anonymous namespaces, would share this instantiation in GCC's output.
// The objects live for the process: sessions may outlive any registration call.
template <typename Def, template <typename> class Kernel>
const std::vector<OrtCustomOp*>& FloatOps(const char* execution_provider) {
  static TypedOp<Def, Float32, Kernel<Float32>> f32{execution_provider};
  static TypedOp<Def, Float16, Kernel<Float16>> f16{execution_provider};
  static TypedOp<Def, BFloat16, Kernel<BFloat16>> bf16{execution_provider};
  static const std::vector<OrtCustomOp*> ops{&f32, &f16, &bf16};
  return ops;
}

constexpr const char* kCpuProvider = "CPUExecutionProvider";
constexpr const char* kCannProvider = "CANNExecutionProvider";

}  // namespace ortops
