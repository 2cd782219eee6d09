// Fetching and checking an op's inputs and allocating its output, shared by every op and EP:
// dtype and shape checks with errors naming the op, the input and both values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/ort_api.h"

namespace ortops {

// Element-wise op I/O: N inputs of one dtype and one shape, one output of that shape.
struct ElementwiseIo {
  std::vector<const void*> inputs;  // data (device memory on a device EP); null when empty
  void* output = nullptr;
  std::vector<int64_t> shape;
  size_t count = 0;                       // elements in each tensor
  const OrtMemoryInfo* memory = nullptr;  // where the first input lives
};

// Checks that the inputs named `names` all have `type` and the same shape (the error names both
// shapes), allocates output 0 with that shape and fills `io`.
OrtStatusPtr PrepareElementwise(OrtKernelContext* context, const char* op, const std::vector<const char*>& names,
                                ONNXTensorElementDataType type, ElementwiseIo* io);

// PrepareElementwise of the inputs of declared op Decl (its name and input names) of element type T.
template <typename Decl, typename T>
OrtStatusPtr PrepareDeclared(OrtKernelContext* context, ElementwiseIo* io) {
  return PrepareElementwise(context, Decl::kName, Decl::InputNames(), T::kOnnxType, io);
}

// The ComputeV2 of a kernel whose inputs `prepare(&io)` reads into an `Io` (with a `count` of
// elements): nothing more for an empty tensor, else `kernel.Run(context, io)`.
template <typename Io, typename K, typename Prepare>
OrtStatusPtr RunPrepared(const K& kernel, OrtKernelContext* context, const Prepare& prepare) {
  Io io;
  ORTOPS_RETURN_IF_ERROR(prepare(&io));
  if (io.count == 0) return nullptr;
  return kernel.Run(context, io);
}

// The float attribute `name`, `fallback` when absent; an error naming the op if it has another type.
OrtStatusPtr ReadFloatAttribute(const OrtKernelInfo* info, const char* op, const char* name, float fallback,
                                float* value);

std::string ShapeText(const std::vector<int64_t>& shape);

// Any input: its data (device memory on a device EP, host memory for on_cpu inputs), element
// type and shape. `present` is false for an omitted optional input.
struct TensorView {
  bool present = false;
  const void* data = nullptr;  // null when absent or empty
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<int64_t> shape;
  size_t count = 0;  // elements
  const OrtMemoryInfo* memory = nullptr;
};

// Input `index` (named `name` in errors) of `op`; omitted optional inputs give present = false.
OrtStatusPtr GetInput(OrtKernelContext* context, size_t index, TensorView* view);
// Allocates output `index` with `shape`; `*data` is null for an empty output. An error naming the
// index if the node does not produce it.
OrtStatusPtr AllocateOutput(OrtKernelContext* context, size_t index, const std::vector<int64_t>& shape, void** data);
// Allocates optional output `index` if the node produces it (`*produced`): an output left out at the
// end or named "" is not produced and gets no memory. `*data` is null for an empty output.
OrtStatusPtr AllocateOptionalOutput(OrtKernelContext* context, size_t index, const std::vector<int64_t>& shape,
                                    void** data, bool* produced);
// Whether the node has an output slot `index` (it may still be named "": AllocateOptionalOutput tells).
bool HasOutput(OrtKernelContext* context, size_t index);

// The values of an int64 or int32 tensor in CPU memory (shapes, axes).
OrtStatusPtr ReadIntegers(const TensorView& view, const char* op, const char* name, std::vector<int64_t>* values);

// Attributes: `fallback` when absent; an error naming the op and attribute if the type differs.
OrtStatusPtr ReadIntAttribute(const OrtKernelInfo* info, const char* op, const char* name, int64_t fallback,
                              int64_t* value);
OrtStatusPtr ReadIntsAttribute(const OrtKernelInfo* info, const char* op, const char* name,
                               const std::vector<int64_t>& fallback, std::vector<int64_t>* value);
OrtStatusPtr ReadFloatsAttribute(const OrtKernelInfo* info, const char* op, const char* name,
                                 const std::vector<float>& fallback, std::vector<float>* value);
OrtStatusPtr ReadStringAttribute(const OrtKernelInfo* info, const char* op, const char* name, const char* fallback,
                                 std::string* value);

size_t ElementCount(const std::vector<int64_t>& shape);
// Bytes of one element of `type` (0 for types the library does not handle).
size_t ElementSize(ONNXTensorElementDataType type);

}  // namespace ortops
