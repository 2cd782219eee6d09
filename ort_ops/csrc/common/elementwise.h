// The CPU skeleton of every elementwise kernel, written once:
//   - the numeric policy: load each operand as float32 (exact for float16/bfloat16), compute in
//     float32, round the result once to the output type (round to nearest even): MapFloat32;
//   - the work split: the tensor in chunks on the session's intra-op pool (parallel.h), on the
//     calling thread when it is small: ForEachChunk.
// A kernel is then a typed function: `float Fn(float...)` through MapElementwise, or, for a kernel
// with its own vector loops (EluGrad), a function over a contiguous range through ForEachChunk.
#pragma once

#include <cstddef>
#include <type_traits>

#include "common/element_type.h"
#include "common/ort_api.h"
#include "common/parallel.h"
#include "common/tensor_io.h"

namespace ortops {

template <typename T, typename Fn>
inline void MapFloat32(const void* x0, const void* x1, void* y, size_t n, Fn fn) {
  for (size_t i = 0; i < n; ++i) StoreFloat<T>(y, i, fn(LoadFloat<T>(x0, i), LoadFloat<T>(x1, i)));
}

template <typename T, typename Fn>
inline void MapFloat32(const void* x0, void* y, size_t n, Fn fn) {
  for (size_t i = 0; i < n; ++i) StoreFloat<T>(y, i, fn(LoadFloat<T>(x0, i)));
}

// Tensors below this many elements run on the calling thread: the pool costs more than it saves.
constexpr size_t kElementwiseParallelMin = size_t{1} << 16;
// Elements per parallel work item (a multiple of 64, so chunks keep the output's alignment).
constexpr size_t kElementwiseChunk = size_t{1} << 15;

// One contiguous piece of an elementwise op's tensors: `n` elements from x[k] (inputs) and y.
struct ElementwiseChunk {
  static constexpr size_t kMaxInputs = 2;
  const void* x[kMaxInputs] = {};
  void* y = nullptr;
  size_t n = 0;
};

// Calls range(const ElementwiseChunk&) over io's elements (T, one or two inputs), in chunks on the
// intra-op pool; nothing for an empty tensor.
template <typename T, typename Range>
OrtStatusPtr ForEachChunk(OrtKernelContext* context, const ElementwiseIo& io, const Range& range) {
  if (io.count == 0) return nullptr;
  struct Job {
    const ElementwiseIo* io;
    const Range* range;
    void Run(size_t begin, size_t end) const {
      ElementwiseChunk chunk;
      for (size_t k = 0; k < io->inputs.size() && k < ElementwiseChunk::kMaxInputs; ++k)
        chunk.x[k] = ElementAt<T>(io->inputs[k], begin);
      chunk.y = ElementAt<T>(io->output, begin);
      chunk.n = end - begin;
      (*range)(chunk);
    }
  } job{&io, &range};
  return RunInChunks(context, io.count, kElementwiseParallelMin, kElementwiseChunk, job);
}

// y = fn(x0[, x1]) elementwise in float32, rounded once to T: the skeleton of a plain kernel.
template <typename T, typename Fn>
OrtStatusPtr MapElementwise(OrtKernelContext* context, const ElementwiseIo& io, Fn fn) {
  return ForEachChunk<T>(context, io, [&fn](const ElementwiseChunk& c) {
    if constexpr (std::is_invocable_v<Fn, float, float>) {
      MapFloat32<T>(c.x[0], c.x[1], c.y, c.n, fn);
    } else {
      MapFloat32<T>(c.x[0], c.y, c.n, fn);
    }
  });
}

// MapElementwise over the inputs of declared op Decl: the whole ComputeV2 of a plain kernel.
template <typename Decl, typename T, typename Fn>
OrtStatusPtr MapDeclared(OrtKernelContext* context, Fn fn) {
  ElementwiseIo io;
  ORTOPS_RETURN_IF_ERROR((PrepareDeclared<Decl, T>(context, &io)));
  return MapElementwise<T>(context, io, fn);
}

}  // namespace ortops
