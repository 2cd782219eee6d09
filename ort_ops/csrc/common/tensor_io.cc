// Input checks and output allocation for every op and EP.
#include "common/tensor_io.h"

#include "common/element_type.h"

namespace ortops {
namespace {

// RAII for OrtTensorTypeAndShapeInfo.
struct TypeAndShape {
  OrtTensorTypeAndShapeInfo* info = nullptr;
  ~TypeAndShape() {
    if (info != nullptr) Api().ReleaseTensorTypeAndShapeInfo(info);
  }
};

OrtStatusPtr ReadInput(OrtKernelContext* context, size_t index, const char* op, const char* name,
                       ONNXTensorElementDataType type, const OrtValue** value, std::vector<int64_t>* shape) {
  const OrtApi& api = Api();
  ORTOPS_RETURN_IF_ERROR(api.KernelContext_GetInput(context, index, value));
  if (*value == nullptr) return MakeError(std::string(op) + ": input " + name + " is missing");
  TypeAndShape ts;
  ORTOPS_RETURN_IF_ERROR(api.GetTensorTypeAndShape(*value, &ts.info));
  ONNXTensorElementDataType actual;
  ORTOPS_RETURN_IF_ERROR(api.GetTensorElementType(ts.info, &actual));
  if (actual != type) {
    return MakeError(std::string(op) + ": " + name + " has dtype " + ElementTypeName(actual) + ", expected " +
                     ElementTypeName(type));
  }
  size_t rank = 0;
  ORTOPS_RETURN_IF_ERROR(api.GetDimensionsCount(ts.info, &rank));
  shape->assign(rank, 0);
  return api.GetDimensions(ts.info, shape->data(), rank);
}

}  // namespace

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

OrtStatusPtr PrepareElementwise(OrtKernelContext* context, const char* op, const std::vector<const char*>& names,
                                ONNXTensorElementDataType type, ElementwiseIo* io) {
  const OrtApi& api = Api();
  std::vector<const OrtValue*> values(names.size(), nullptr);
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<int64_t> shape;
    ORTOPS_RETURN_IF_ERROR(ReadInput(context, i, op, names[i], type, &values[i], i == 0 ? &io->shape : &shape));
    if (i != 0 && shape != io->shape) {
      return MakeError(std::string(op) + ": " + names[0] + " shape " + ShapeText(io->shape) + " differs from " +
                       names[i] + " shape " + ShapeText(shape) + "; they must be equal");
    }
  }
  io->count = 1;
  for (int64_t d : io->shape) io->count *= static_cast<size_t>(d);
  OrtValue* y = nullptr;
  ORTOPS_RETURN_IF_ERROR(api.KernelContext_GetOutput(context, 0, io->shape.data(), io->shape.size(), &y));
  ORTOPS_RETURN_IF_ERROR(api.GetTensorMemoryInfo(values[0], &io->memory));
  io->inputs.assign(names.size(), nullptr);
  if (io->count == 0) return nullptr;  // empty tensors: nothing to compute or read
  // The C API has no const accessor in API 17; the inputs are only read.
  for (size_t i = 0; i < names.size(); ++i) {
    void* data = nullptr;
    ORTOPS_RETURN_IF_ERROR(api.GetTensorMutableData(const_cast<OrtValue*>(values[i]), &data));
    io->inputs[i] = data;
  }
  return api.GetTensorMutableData(y, &io->output);
}

OrtStatusPtr ReadFloatAttribute(const OrtKernelInfo* info, const char* op, const char* name, float fallback,
                                float* value) {
  const OrtApi& api = Api();
  // Absent attribute: the attribute lookup by name fails with "No attribute with name".
  OrtStatusPtr status = api.KernelInfoGetAttribute_float(info, name, value);
  if (status == nullptr) return nullptr;
  std::string message = api.GetErrorMessage(status);
  api.ReleaseStatus(status);
  if (message.find("No attribute with name") != std::string::npos) {
    *value = fallback;
    return nullptr;
  }
  return MakeError(std::string(op) + ": attribute " + name + " must be a float (" + message + ")");
}

}  // namespace ortops
