// How every op of the library registers (its own ops on every EP and dtype, and the standard ops
// placed on CANN): one DeclaredOp per kernel variant, an OrtCustomOp described by data rather than
// by a class per op: name, EP, the element type of every input and output, which inputs are
// optional or read from CPU memory, and a factory for its kernel.
//
// The idiom: every kernel file ends with
//   void Register<Ep>(OpList& list) { ... }     // Ep: Cpu or Cann
// that adds its ops to `list` (the list knows the EP); the build generates the calls
// (register_ops.cc). An op of ort_ops/ops/ adds the variants its declaration says (the generated
// `Declaration`, common/op_declaration.h):
//   void RegisterCpu(OpList& list) { list.AddDeclared<Declaration, CpuKernel>(); }
// a placed op adds each variant by hand (placed/common/placed_op.h):
//   void RegisterCann(OpList& list) { list.Add("Relu", {In(kF32)}, {In(kF32)}, Make<UnaryKernel>); }
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "common/element_type.h"
#include "common/op_base.h"
#include "common/ort_api.h"

namespace ortops {

// One input or output of a kernel variant.
struct IoSpec {
  ONNXTensorElementDataType type;
  bool optional = false;
  // Inputs only: the kernel reads it in CPU memory (shapes, axes): ORT keeps it on the host
  // (an initializer is placed there once, no copy per run).
  bool on_cpu = false;
  // The last input or output only: it repeats (at least once, every one of `type`), like
  // Concat's inputs and Split's outputs.
  bool variadic = false;
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
  OrtCustomOpInputOutputCharacteristic GetInputCharacteristic(size_t i) const { return Characteristic(inputs_[i]); }
  OrtMemType GetInputMemoryType(size_t i) const { return inputs_[i].on_cpu ? OrtMemTypeCPUInput : OrtMemTypeDefault; }
  size_t GetOutputTypeCount() const { return outputs_.size(); }
  ONNXTensorElementDataType GetOutputType(size_t i) const { return outputs_[i].type; }
  OrtCustomOpInputOutputCharacteristic GetOutputCharacteristic(size_t i) const { return Characteristic(outputs_[i]); }

  const std::vector<IoSpec>& inputs() const { return inputs_; }
  const std::vector<IoSpec>& outputs() const { return outputs_; }

 private:
  static OrtCustomOpInputOutputCharacteristic Characteristic(const IoSpec& io) {
    return io.variadic ? INPUT_OUTPUT_VARIADIC : io.optional ? INPUT_OUTPUT_OPTIONAL : INPUT_OUTPUT_REQUIRED;
  }

  const char* name_;
  const char* execution_provider_;
  std::vector<IoSpec> inputs_, outputs_;
  KernelFactory factory_;
};

// The base of a kernel whose op checks its declared attributes into its own `A` at creation
// (`Read`: the op header's ReadAttributes); ComputeV2 reads `attributes_`.
template <typename A, OrtStatusPtr (*Read)(const OrtKernelInfo*, A*)>
class CheckedAttributesKernel : public Kernel {
 public:
  CheckedAttributesKernel(const OrtKernelInfo* info, const DeclaredOp&, OrtStatusPtr* status) {
    *status = Read(info, &attributes_);
  }

 protected:
  A attributes_;
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

// Whether kernel class K has `OrtStatusPtr Init()` (its checks at creation).
template <typename K, typename = void>
struct HasInit : std::false_type {};
template <typename K>
struct HasInit<K, std::void_t<decltype(std::declval<K&>().Init())>> : std::true_type {};

// A kernel class constructed from the op's declared attributes (`Decl::Attributes`, read and
// checked by `Decl::ReadAttributes`), optionally with `OrtStatusPtr Init()`, and a non-virtual
// ComputeV2.
template <typename Decl, typename K>
class AttributeKernel : public Kernel {
 public:
  explicit AttributeKernel(const typename Decl::Attributes& attributes) : kernel_(attributes) {}
  OrtStatusPtr Init() {
    if constexpr (HasInit<K>::value) {
      return kernel_.Init();
    } else {
      return nullptr;
    }
  }
  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override { return kernel_.ComputeV2(context); }

 private:
  K kernel_;
};

// The base of a kernel class of declared op Decl: `attributes`, its declared attributes as read and
// checked at creation. A kernel inherits the constructor:
//   template <typename T>
//   struct CpuKernel : WithAttributes<Def> {
//     using WithAttributes<Def>::WithAttributes;
//     OrtStatusPtr ComputeV2(OrtKernelContext* context) const;  // reads attributes.axis, ...
//   };
template <typename Decl>
struct WithAttributes {
  explicit WithAttributes(const typename Decl::Attributes& declared) : attributes(declared) {}
  const typename Decl::Attributes attributes;
};

template <typename Decl, typename K>
OrtStatusPtr MakeAttributeKernel(const OrtKernelInfo* info, const DeclaredOp&, Kernel** kernel) {
  typename Decl::Attributes attributes;
  ORTOPS_RETURN_IF_ERROR(Decl::ReadAttributes(info, &attributes));
  auto* made = new AttributeKernel<Decl, K>(attributes);
  if (OrtStatusPtr status = made->Init()) {
    delete made;
    return status;
  }
  *kernel = made;
  return nullptr;
}

// The factory of kernel class K of an op declared by Decl: K(info, op, &status) (the kernel reads
// its attributes itself) or K(const Decl::Attributes&) with Init() (AttributeKernel).
template <typename Decl, typename K>
constexpr KernelFactory DeclaredFactory() {
  if constexpr (std::is_constructible_v<K, const OrtKernelInfo*, const DeclaredOp&, OrtStatusPtr*>) {
    return MakeKernel<K>;
  } else {
    return MakeAttributeKernel<Decl, K>;
  }
}

// The element types of T of a declared op, as ONNX element type codes.
template <ONNXTensorElementDataType... Codes>
struct TypeCodes {};

// The element-type class of an ONNX code (Float32, Float16, BFloat16: the types kernels are templated on).
template <ONNXTensorElementDataType Code>
struct ElementTypeOf;
template <>
struct ElementTypeOf<ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT> {
  using type = Float32;
};
template <>
struct ElementTypeOf<ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16> {
  using type = Float16;
};
template <>
struct ElementTypeOf<ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16> {
  using type = BFloat16;
};

// The ops one kernel file registers on one EP. Every op object lives for the process (sessions
// may outlive a registration call).
class OpList {
 public:
  explicit OpList(const char* execution_provider) : execution_provider_(execution_provider) {}

  // Adds op `name` of this list's EP with these inputs and outputs.
  OpList& Add(const char* name, std::vector<IoSpec> inputs, std::vector<IoSpec> outputs, KernelFactory factory) {
    ops_.push_back(new DeclaredOp(name, execution_provider_, std::move(inputs), std::move(outputs), factory));
    return *this;
  }
  // One op per element type of T of the declared op `Decl`, kernel K<T> (T: Float32, Float16, BFloat16).
  template <typename Decl, template <typename> class K>
  OpList& AddDeclared() {
    AddEach<Decl, K>(typename Decl::Types{});
    return *this;
  }
  // One op per element type of T of the declared op `Decl`, all with kernel class K.
  template <typename Decl, typename K>
  OpList& AddDeclared() {
    AddAll<Decl, K>(typename Decl::Types{});
    return *this;
  }

  const char* execution_provider() const { return execution_provider_; }
  const std::vector<OrtCustomOp*>& ops() const { return ops_; }

 private:
  template <typename Decl, template <typename> class K, ONNXTensorElementDataType... Codes>
  void AddEach(TypeCodes<Codes...>) {
    (Add(Decl::kName, Decl::InputSpecs(Codes), Decl::OutputSpecs(Codes),
         DeclaredFactory<Decl, K<typename ElementTypeOf<Codes>::type>>()),
     ...);
  }
  template <typename Decl, typename K, ONNXTensorElementDataType... Codes>
  void AddAll(TypeCodes<Codes...>) {
    (Add(Decl::kName, Decl::InputSpecs(Codes), Decl::OutputSpecs(Codes), DeclaredFactory<Decl, K>()), ...);
  }

  const char* execution_provider_;
  std::vector<OrtCustomOp*> ops_;
};

}  // namespace ortops
