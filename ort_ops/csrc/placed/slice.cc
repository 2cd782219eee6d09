// Slice (opset 10+ form: starts, ends, axes, steps as host inputs) with unit steps, placed on
// CANN: CANN Slice (x, offsets, size as constant inputs, one entry per dimension).
#include <algorithm>
#include <string>

#include "placed/common/placed_op.h"

namespace ortops::placed::slice {
namespace {

class SliceKernel : public PlacedKernel {
 public:
  SliceKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status) : PlacedKernel(info, op, status) {}

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, starts_v, ends_v, axes_v, steps_v;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "data", &x));
    ORTOPS_RETURN_IF_ERROR(Input(context, 1, "starts", &starts_v));
    ORTOPS_RETURN_IF_ERROR(Input(context, 2, "ends", &ends_v));
    ORTOPS_RETURN_IF_ERROR(GetInput(context, 3, &axes_v));
    ORTOPS_RETURN_IF_ERROR(GetInput(context, 4, &steps_v));
    std::vector<int64_t> starts, ends, axes, steps;
    ORTOPS_RETURN_IF_ERROR(Ints(starts_v, "starts", &starts));
    ORTOPS_RETURN_IF_ERROR(Ints(ends_v, "ends", &ends));
    const size_t rank = x.shape.size();
    if (axes_v.present) {
      ORTOPS_RETURN_IF_ERROR(Ints(axes_v, "axes", &axes));
    } else {
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    if (steps_v.present) ORTOPS_RETURN_IF_ERROR(Ints(steps_v, "steps", &steps));
    if (ends.size() != starts.size() || axes.size() != starts.size() ||
        (!steps.empty() && steps.size() != starts.size())) {
      return Fail("starts, ends, axes and steps must have one length");
    }
    std::vector<int64_t> offsets(rank, 0), size(x.shape);
    std::vector<bool> seen(rank, false);
    for (size_t i = 0; i < starts.size(); ++i) {
      if (!steps.empty() && steps[i] != 1) {
        return Fail("step " + std::to_string(steps[i]) + " is not supported on CANN (unit steps only)");
      }
      int64_t axis = 0;
      if (!NormalizeAxis(axes[i], rank, &axis) || seen[static_cast<size_t>(axis)]) {
        return Fail("axes " + ShapeText(axes) + " are out of range or repeated for data of shape " +
                    ShapeText(x.shape));
      }
      seen[static_cast<size_t>(axis)] = true;
      const int64_t dim = x.shape[static_cast<size_t>(axis)];
      auto clamp = [dim](int64_t v) {
        if (v < 0) v = v < -dim ? 0 : v + dim;
        return std::min(v, dim);
      };
      const int64_t begin = clamp(starts[i]);
      const int64_t end = clamp(ends[i]);
      offsets[static_cast<size_t>(axis)] = begin;
      size[static_cast<size_t>(axis)] = std::max<int64_t>(0, end - begin);
    }
    return OnOutput(context, size, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const size_t count = ElementCount(size);
      if (count == x.count) return run.CopyOnDevice(out, x.data, Bytes(x));
      return LaunchSlice(run, x, offsets, size, out);
    });
  }
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kF64, kI32, kI64, kBool}) {
    list.Add("Slice", {In(t), HostInts(), HostInts(), HostInts(true), HostInts(true)}, {In(t)}, Make<SliceKernel>);
  }
}

}  // namespace ortops::placed::slice
