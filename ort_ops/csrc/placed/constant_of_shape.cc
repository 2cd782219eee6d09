// ConstantOfShape (opset 9+) placed on CANN: the output of shape `input` (an int64 host input, a
// constant or computed at run time) filled with the `value` attribute (one element; absent: float
// 0), produced on the device. A value whose bytes are all equal (zeros of every type, bool true):
// aclrtMemsetAsync; otherwise CANN Fill (GE op_proto fill.h, REG_OP(Fill): inputs dims, "a 1D
// tensor of types int32 or int64", and value, "a 0D scalar" of float16, float32, double, int32,
// int64, ...; output y of shape dims, "the same type as value"; bool is not among its types, and
// needs no Fill). One op name per value type (ConstantOfShapeFloat, ...): ORT infers a custom
// op's output type from its input types alone.
#include <cstring>
#include <string>

#include "placed/common/placed_op.h"

namespace ortops::placed::constant_of_shape {
namespace {

constexpr OpOfOutputType kValueTypes[] = {
    {"ConstantOfShapeFloat", kF32}, {"ConstantOfShapeFloat16", kF16}, {"ConstantOfShapeDouble", kF64},
    {"ConstantOfShapeInt32", kI32}, {"ConstantOfShapeInt64", kI64},   {"ConstantOfShapeBool", kBool},
};

class ConstantOfShapeKernel : public PlacedKernel {
 public:
  ConstantOfShapeKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status, "memset", "ConstantOfShape"), type_(op.outputs()[0].type) {
    if (*status != nullptr) return;
    *status = ReadValue(info);
    if (*status == nullptr && !SameBytes(value_)) *status = RequireRoute(*acl_, "fill");  // as rewrite.placement
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    std::vector<int64_t> shape;
    ORTOPS_RETURN_IF_ERROR(InputInts(context, 0, "input", &shape));
    for (int64_t d : shape) {
      if (d < 0) return Fail("input (the shape) is " + ShapeText(shape) + "; every dimension must be >= 0");
    }
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      return FillOnDevice(run, value_, type_, shape, out);
    });
  }

 private:
  // The `value` attribute's one element, as bytes; absent: float 0 (ONNX's default).
  OrtStatusPtr ReadValue(const OrtKernelInfo* info) {
    OrtAllocator* allocator = nullptr;
    ORTOPS_RETURN_IF_ERROR(Api().GetAllocatorWithDefaultOptions(&allocator));
    OrtValue* value = nullptr;
    OrtStatusPtr status = Api().KernelInfoGetAttribute_tensor(info, "value", allocator, &value);
    if (status != nullptr) {
      const std::string message = Api().GetErrorMessage(status);
      Api().ReleaseStatus(status);
      if (message.find("No attribute") == std::string::npos) {
        return Fail("attribute value must be a tensor (" + message + ")");
      }
      if (type_ != kF32) return Fail("attribute value is absent (float 0), but the op's output type is not float");
      value_.assign(sizeof(float), 0);
      return nullptr;
    }
    OrtTensorTypeAndShapeInfo* shape_info = nullptr;
    ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    size_t count = 0;
    void* data = nullptr;
    status = Api().GetTensorTypeAndShape(value, &shape_info);
    if (status == nullptr) status = Api().GetTensorElementType(shape_info, &type);
    if (status == nullptr) status = Api().GetTensorShapeElementCount(shape_info, &count);
    if (status == nullptr) status = Api().GetTensorMutableData(value, &data);
    if (status == nullptr && type == type_ && count == 1) {
      const auto* bytes = static_cast<const unsigned char*>(data);
      value_.assign(bytes, bytes + ElementSize(type_));
    }
    if (shape_info != nullptr) Api().ReleaseTensorTypeAndShapeInfo(shape_info);
    Api().ReleaseValue(value);
    if (status != nullptr) return status;
    if (type != type_ || count != 1) {
      return Fail("attribute value must hold one element of the op's type " + std::to_string(static_cast<int>(type_)) +
                  "; it holds " + std::to_string(count) + " of type " + std::to_string(static_cast<int>(type)));
    }
    return nullptr;
  }

  ONNXTensorElementDataType type_;
  std::vector<unsigned char> value_;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (const OpOfOutputType& v : kValueTypes) list.Add(v.op, {HostInts()}, {In(v.type)}, Make<ConstantOfShapeKernel>);
}

}  // namespace ortops::placed::constant_of_shape
