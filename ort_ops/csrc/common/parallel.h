// Elementwise work over [0, count) on the session's intra-op thread pool.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "common/ort_api.h"

namespace ortops {

// Calls job.Run(begin, end) over [0, count): on the calling thread when count < parallel_min
// (the pool costs more than it saves), else in chunk-element pieces through
// KernelContext_ParallelFor. `job` outlives the call (ParallelFor returns when all pieces ran).
template <typename Job>
OrtStatusPtr RunInChunks(OrtKernelContext* context, size_t count, size_t parallel_min, size_t chunk, const Job& job) {
  if (count < parallel_min) {
    job.Run(0, count);
    return nullptr;
  }
  struct Pieces {
    const Job* job;
    size_t count, chunk;
    static void Run(void* self, size_t index) {
      const Pieces& p = *static_cast<const Pieces*>(self);
      const size_t begin = index * p.chunk;
      p.job->Run(begin, std::min(p.count, begin + p.chunk));
    }
  } pieces{&job, count, chunk};
  return Api().KernelContext_ParallelFor(context, &Pieces::Run, (count + chunk - 1) / chunk, 0, &pieces);
}

// ForEachItem's threshold for kernels with one plane or row per item (MaxPoolGrad, the loss):
// below this many elements the work stays on the calling thread.
constexpr int64_t kItemParallelMinElements = int64_t{1} << 15;

// Calls item(i) for every i in [0, items), the items together `elements` elements of work: one i
// per work piece on the intra-op pool when that is worth it (at least kItemParallelMinElements
// elements and more than one item), else in order on the calling thread. `item` outlives the call.
template <typename Item>
OrtStatusPtr ForEachItem(OrtKernelContext* context, size_t items, int64_t elements, const Item& item) {
  struct Job {
    const Item* item;
    void Run(size_t begin, size_t end) const {
      for (size_t i = begin; i < end; ++i) (*item)(i);
    }
  } job{&item};
  if (elements < kItemParallelMinElements || items <= 1) {
    job.Run(0, items);
    return nullptr;
  }
  return RunInChunks(context, items, 0, 1, job);
}

}  // namespace ortops
