// Optional float32 outputs that a placed kernel's CANN op writes in any case (LayerNormV4's mean and rstd,
// BatchNormV3's running statistics): the ones the node produces are allocated, the ones it leaves out (absent or
// named "") get a slot of the run's scratch instead.
#pragma once

#include <cstddef>
#include <vector>

#include "cann/sequence_kernel.h"
#include "common/tensor_io.h"

namespace ortops::placed {

template <size_t N>
class StatisticsOutputs {
 public:
  // Outputs first .. first + N - 1, each of `shape` float32.
  OrtStatusPtr Allocate(OrtKernelContext* context, size_t first, const std::vector<int64_t>& shape) {
    bytes_ = ElementCount(shape) * sizeof(float);
    for (size_t i = 0; i < N; ++i) {
      ORTOPS_RETURN_IF_ERROR(AllocateOptionalOutput(context, first + i, shape, &data_[i], &produced_[i]));
    }
    return nullptr;
  }
  // Before the run's lease: a scratch slot for each output left out.
  void Reserve(cann::ScratchLayout* layout) {
    for (size_t i = 0; i < N; ++i) at_[i] = layout->Add(produced_[i] ? 0 : bytes_);
  }
  // After the lease: where the op writes statistic `i`.
  void* Data(const cann::SequenceRun& run, size_t i) const { return produced_[i] ? data_[i] : run.Scratch(at_[i]); }
  bool produced(size_t i) const { return produced_[i]; }
  size_t bytes() const { return bytes_; }

 private:
  void* data_[N] = {};
  bool produced_[N] = {};
  size_t at_[N] = {};
  size_t bytes_ = 0;
};

}  // namespace ortops::placed
