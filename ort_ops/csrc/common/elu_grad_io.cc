// EluGrad input checks and output allocation, shared by every EP's kernel.
#include "common/elu_grad_io.h"

#include <cstring>
#include <string>

#include "common/element_type.h"

namespace ortops {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

// RAII for OrtTensorTypeAndShapeInfo.
struct TypeAndShape {
  OrtTensorTypeAndShapeInfo* info = nullptr;
  ~TypeAndShape() {
    if (info != nullptr) Api().ReleaseTensorTypeAndShapeInfo(info);
  }
};

OrtStatusPtr ReadInput(OrtKernelContext* context, size_t index, const char* name,
                       ONNXTensorElementDataType type, const OrtValue** value,
                       std::vector<int64_t>* shape) {
  const OrtApi& api = Api();
  ORTOPS_RETURN_IF_ERROR(api.KernelContext_GetInput(context, index, value));
  if (*value == nullptr) return MakeError(std::string("EluGrad: input ") + name + " is missing");
  TypeAndShape ts;
  ORTOPS_RETURN_IF_ERROR(api.GetTensorTypeAndShape(*value, &ts.info));
  ONNXTensorElementDataType actual;
  ORTOPS_RETURN_IF_ERROR(api.GetTensorElementType(ts.info, &actual));
  if (actual != type) {
    return MakeError(std::string("EluGrad: ") + name + " has dtype " + ElementTypeName(actual) +
                     ", expected " + ElementTypeName(type));
  }
  size_t rank = 0;
  ORTOPS_RETURN_IF_ERROR(api.GetDimensionsCount(ts.info, &rank));
  shape->assign(rank, 0);
  return api.GetDimensions(ts.info, shape->data(), rank);
}

}  // namespace

const char* ElementTypeName(ONNXTensorElementDataType type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return "float32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return "float16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: return "bfloat16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return "float64";
    default: return "an unsupported type";
  }
}

OrtStatusPtr PrepareEluGrad(OrtKernelContext* context, ONNXTensorElementDataType type,
                            EluGradIo* io) {
  const OrtApi& api = Api();
  const OrtValue* grads = nullptr;
  const OrtValue* activations = nullptr;
  std::vector<int64_t> activations_shape;
  ORTOPS_RETURN_IF_ERROR(ReadInput(context, 0, "grads", type, &grads, &io->shape));
  ORTOPS_RETURN_IF_ERROR(
      ReadInput(context, 1, "activations", type, &activations, &activations_shape));
  if (io->shape != activations_shape) {
    return MakeError("EluGrad: grads shape " + ShapeText(io->shape) +
                     " differs from activations shape " + ShapeText(activations_shape) +
                     "; they must be equal");
  }
  io->count = 1;
  for (int64_t d : io->shape) io->count *= static_cast<size_t>(d);
  OrtValue* y = nullptr;
  ORTOPS_RETURN_IF_ERROR(
      api.KernelContext_GetOutput(context, 0, io->shape.data(), io->shape.size(), &y));
  if (io->count == 0) return nullptr;  // empty tensors: nothing to compute or read
  // The C API has no const accessor in API 21; the inputs are only read.
  void* data = nullptr;
  ORTOPS_RETURN_IF_ERROR(api.GetTensorMutableData(const_cast<OrtValue*>(grads), &data));
  io->grads = data;
  ORTOPS_RETURN_IF_ERROR(api.GetTensorMutableData(const_cast<OrtValue*>(activations), &data));
  io->activations = data;
  return api.GetTensorMutableData(y, &io->y);
}

OrtStatusPtr ReadAlpha(const OrtKernelInfo* info, float* alpha) {
  const OrtApi& api = Api();
  // Absent attribute: the attribute lookup by name fails with "No attribute with name".
  OrtStatusPtr status = api.KernelInfoGetAttribute_float(info, "alpha", alpha);
  if (status == nullptr) return nullptr;
  std::string message = api.GetErrorMessage(status);
  api.ReleaseStatus(status);
  if (message.find("No attribute with name") != std::string::npos) {
    *alpha = 1.0f;
    return nullptr;
  }
  return MakeError("EluGrad: attribute alpha must be a float (" + message + ")");
}

}  // namespace ortops
