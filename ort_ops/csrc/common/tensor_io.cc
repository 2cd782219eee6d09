// Input checks and output allocation for every op and EP.
#include "common/tensor_io.h"

#include <cstring>

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

size_t ElementCount(const std::vector<int64_t>& shape) {
  size_t count = 1;
  for (int64_t d : shape) count *= static_cast<size_t>(d);
  return count;
}

size_t ElementSize(ONNXTensorElementDataType type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64: return 8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32: return 4;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16: return 2;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: return 1;
    default: return 0;
  }
}

OrtStatusPtr GetInput(OrtKernelContext* context, size_t index, TensorView* view) {
  const OrtApi& api = Api();
  const OrtValue* value = nullptr;
  ORTOPS_RETURN_IF_ERROR(api.KernelContext_GetInput(context, index, &value));
  *view = TensorView();
  if (value == nullptr) return nullptr;
  view->present = true;
  TypeAndShape ts;
  ORTOPS_RETURN_IF_ERROR(api.GetTensorTypeAndShape(value, &ts.info));
  ORTOPS_RETURN_IF_ERROR(api.GetTensorElementType(ts.info, &view->type));
  size_t rank = 0;
  ORTOPS_RETURN_IF_ERROR(api.GetDimensionsCount(ts.info, &rank));
  view->shape.assign(rank, 0);
  ORTOPS_RETURN_IF_ERROR(api.GetDimensions(ts.info, view->shape.data(), rank));
  view->count = ElementCount(view->shape);
  ORTOPS_RETURN_IF_ERROR(api.GetTensorMemoryInfo(value, &view->memory));
  if (view->count == 0) return nullptr;
  void* data = nullptr;  // (no const accessor in API 17; inputs are only read)
  ORTOPS_RETURN_IF_ERROR(api.GetTensorMutableData(const_cast<OrtValue*>(value), &data));
  view->data = data;
  return nullptr;
}

OrtStatusPtr AllocateOptionalOutput(OrtKernelContext* context, size_t index, const std::vector<int64_t>& shape,
                                    void** data, bool* produced) {
  const OrtApi& api = Api();
  OrtValue* y = nullptr;
  *data = nullptr;
  *produced = false;
  if (!HasOutput(context, index)) return nullptr;
  // ORT gives no OrtValue for an output named "" (OpKernelContext::Output of a missing NodeArg).
  ORTOPS_RETURN_IF_ERROR(api.KernelContext_GetOutput(context, index, shape.data(), shape.size(), &y));
  if (y == nullptr) return nullptr;
  *produced = true;
  if (ElementCount(shape) == 0) return nullptr;
  return api.GetTensorMutableData(y, data);
}

OrtStatusPtr AllocateOutput(OrtKernelContext* context, size_t index, const std::vector<int64_t>& shape, void** data) {
  bool produced = false;
  ORTOPS_RETURN_IF_ERROR(AllocateOptionalOutput(context, index, shape, data, &produced));
  if (!produced) return MakeError("output " + std::to_string(index) + " is required but the node does not produce it");
  return nullptr;
}

bool HasOutput(OrtKernelContext* context, size_t index) {
  size_t count = 0;
  if (OrtStatusPtr status = Api().KernelContext_GetOutputCount(context, &count)) {
    Api().ReleaseStatus(status);
    return false;
  }
  return index < count;
}

OrtStatusPtr ReadIntegers(const TensorView& view, const char* op, const char* name, std::vector<int64_t>* values) {
  values->resize(view.count);
  const auto* bytes = static_cast<const unsigned char*>(view.data);
  for (size_t i = 0; i < view.count; ++i) {
    if (view.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64) {
      std::memcpy(&(*values)[i], bytes + 8 * i, 8);
    } else if (view.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32) {
      int32_t v;
      std::memcpy(&v, bytes + 4 * i, 4);
      (*values)[i] = v;
    } else {
      return MakeError(std::string(op) + ": " + name + " must be int64 or int32, got " + ElementTypeName(view.type));
    }
  }
  return nullptr;
}

namespace {
// Absent attribute: the lookup by name fails with "No attribute with name ..." (scalars) or
// "No attribute with this name is defined." (arrays, strings).
bool Absent(OrtStatusPtr status, std::string* message) {
  *message = Api().GetErrorMessage(status);
  Api().ReleaseStatus(status);
  return message->find("No attribute with") != std::string::npos;
}
}  // namespace

OrtStatusPtr ReadIntAttribute(const OrtKernelInfo* info, const char* op, const char* name, int64_t fallback,
                              int64_t* value) {
  OrtStatusPtr status = Api().KernelInfoGetAttribute_int64(info, name, value);
  if (status == nullptr) return nullptr;
  std::string message;
  if (Absent(status, &message)) {
    *value = fallback;
    return nullptr;
  }
  return MakeError(std::string(op) + ": attribute " + name + " must be an int (" + message + ")");
}

OrtStatusPtr ReadIntsAttribute(const OrtKernelInfo* info, const char* op, const char* name,
                               const std::vector<int64_t>& fallback, std::vector<int64_t>* value) {
  size_t size = 0;
  OrtStatusPtr status = Api().KernelInfoGetAttributeArray_int64(info, name, nullptr, &size);
  if (status != nullptr) {
    std::string message;
    if (Absent(status, &message)) {
      *value = fallback;
      return nullptr;
    }
    return MakeError(std::string(op) + ": attribute " + name + " must be a list of ints (" + message + ")");
  }
  value->assign(size, 0);
  if (size == 0) return nullptr;
  return Api().KernelInfoGetAttributeArray_int64(info, name, value->data(), &size);
}

OrtStatusPtr ReadFloatsAttribute(const OrtKernelInfo* info, const char* op, const char* name,
                                 const std::vector<float>& fallback, std::vector<float>* value) {
  size_t size = 0;
  OrtStatusPtr status = Api().KernelInfoGetAttributeArray_float(info, name, nullptr, &size);
  if (status != nullptr) {
    std::string message;
    if (Absent(status, &message)) {
      *value = fallback;
      return nullptr;
    }
    return MakeError(std::string(op) + ": attribute " + name + " must be a list of floats (" + message + ")");
  }
  value->assign(size, 0.0f);
  if (size == 0) return nullptr;
  return Api().KernelInfoGetAttributeArray_float(info, name, value->data(), &size);
}

OrtStatusPtr ReadStringAttribute(const OrtKernelInfo* info, const char* op, const char* name, const char* fallback,
                                 std::string* value) {
  size_t size = 0;
  OrtStatusPtr status = Api().KernelInfoGetAttribute_string(info, name, nullptr, &size);
  if (status != nullptr) {
    std::string message;
    if (Absent(status, &message)) {
      *value = fallback;
      return nullptr;
    }
    return MakeError(std::string(op) + ": attribute " + name + " must be a string (" + message + ")");
  }
  std::string text(size, '\0');
  ORTOPS_RETURN_IF_ERROR(Api().KernelInfoGetAttribute_string(info, name, text.data(), &size));
  text.resize(size > 0 ? size - 1 : 0);  // size counts the terminating NUL
  *value = text;
  return nullptr;
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
