// The ONNX Runtime C/C++ API as this library uses it (ORT_API_MANUAL_INIT comes from CMake).
//
// The library is compiled against the API 21 headers but asks the runtime for the newest API it
// offers, down to kMinApiVersion (the newest function the kernels call is
// KernelContext_ParallelFor, API 17): the same library runs in ONNX Runtime 1.17 and newer.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <string>

namespace ortops {

// The oldest ORT API the kernels work with, and the API version negotiated with the runtime.
constexpr uint32_t kMinApiVersion = 17;
uint32_t NegotiatedApiVersion();

// The API table set by RegisterCustomOps; kernels only run after it.
inline const OrtApi& Api() { return Ort::GetApi(); }

inline OrtStatusPtr MakeError(const std::string& message, OrtErrorCode code = ORT_INVALID_ARGUMENT) {
  return Api().CreateStatus(code, message.c_str());
}

}  // namespace ortops

// Evaluates an OrtStatusPtr expression and returns it from the enclosing function on error.
#define ORTOPS_RETURN_IF_ERROR(expr)                      \
  do {                                                    \
    OrtStatusPtr ortops_status_ = (expr);                 \
    if (ortops_status_ != nullptr) return ortops_status_; \
  } while (0)
