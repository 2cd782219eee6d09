// The ONNX Runtime C/C++ API as this library uses it (ORT_API_MANUAL_INIT comes from CMake).
#pragma once

#include <onnxruntime_cxx_api.h>

#include <string>

namespace ortops {

// The API table set by RegisterCustomOps; kernels only run after it.
inline const OrtApi& Api() { return Ort::GetApi(); }

inline OrtStatusPtr MakeError(const std::string& message, OrtErrorCode code = ORT_INVALID_ARGUMENT) {
  return Api().CreateStatus(code, message.c_str());
}

}  // namespace ortops

// Evaluates an OrtStatusPtr expression and returns it from the enclosing function on error.
#define ORTOPS_RETURN_IF_ERROR(expr)      \
  do {                                    \
    OrtStatusPtr ortops_status_ = (expr); \
    if (ortops_status_ != nullptr) return ortops_status_; \
  } while (0)
