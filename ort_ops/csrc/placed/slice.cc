// Slice (opset 10+ form: starts, ends, axes, steps as host inputs) placed on CANN: with unit steps
// CANN Slice (x, offsets, size as constant inputs, one entry per dimension); with any other steps
// CANN StridedSlice (begin, end, strides for every dimension, as ONNX clamps them: step > 0 start
// and end in [0, dim]; step < 0 start in [0, dim - 1], end in [-1, dim - 1], where an end of -1
// ("before the first element") is sent as that dimension's end_mask bit, since StridedSlice reads
// -1 as the last element).
#include <algorithm>
#include <string>

#include "placed/common/placed_op.h"

namespace ortops::placed::slice {
namespace {

class SliceKernel : public PlacedKernel {
 public:
  using PlacedKernel::PlacedKernel;

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
    std::vector<int64_t> offsets(rank, 0), size(x.shape), ends_of(x.shape), strides(rank, 1);
    std::vector<bool> seen(rank, false);
    bool unit = true;
    for (size_t i = 0; i < starts.size(); ++i) {
      const int64_t step = steps.empty() ? 1 : steps[i];
      if (step == 0) return Fail("steps " + ShapeText(steps) + " must not be 0");
      int64_t axis = 0;
      if (!NormalizeAxis(axes[i], rank, &axis) || seen[static_cast<size_t>(axis)]) {
        return Fail("axes " + ShapeText(axes) + " are out of range or repeated for data of shape " +
                    ShapeText(x.shape));
      }
      seen[static_cast<size_t>(axis)] = true;
      const auto a = static_cast<size_t>(axis);
      const int64_t dim = x.shape[a];
      // ONNX: a negative index counts from the end; then clamp to [lo, hi].
      auto clamp = [dim](int64_t v, int64_t lo, int64_t hi) {
        if (v < 0) v = v < -dim ? lo : v + dim;
        return std::min(std::max(v, lo), hi);
      };
      const int64_t begin = step > 0 ? clamp(starts[i], 0, dim) : clamp(starts[i], 0, dim - 1);
      const int64_t end = step > 0 ? clamp(ends[i], 0, dim) : clamp(ends[i], -1, dim - 1);
      offsets[a] = begin;
      ends_of[a] = end;
      strides[a] = step;
      const int64_t span = step > 0 ? end - begin : begin - end, by = step > 0 ? step : -step;
      size[a] = span <= 0 ? 0 : (span - 1) / by + 1;
      unit = unit && step == 1;
    }
    return OnOutput(context, size, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const size_t count = ElementCount(size);
      if (unit && count == x.count) return run.CopyOnDevice(out, x.data, Bytes(x));
      if (unit) return LaunchSlice(run, x, offsets, size, out);
      if (count == 0) return nullptr;
      if (rank > 63) return Fail("data of rank " + std::to_string(rank) + " is beyond StridedSlice's 64-bit masks");
      ORTOPS_RETURN_IF_ERROR(RequireRoute(*run.acl, "strided"));
      int64_t end_mask = 0;
      for (size_t d = 0; d < rank; ++d) {
        if (ends_of[d] == -1) end_mask |= int64_t{1} << d;
      }
      const aclDataType type = AclTypeOf(x.type);
      const auto n = static_cast<int64_t>(rank);
      return AclOp(*run.acl, "StridedSlice")
          .Input(x.data, Bytes(x), type, x.shape)
          .ConstInput(offsets.data(), rank * sizeof(int64_t), ACL_INT64, {n})
          .ConstInput(ends_of.data(), rank * sizeof(int64_t), ACL_INT64, {n})
          .ConstInput(strides.data(), rank * sizeof(int64_t), ACL_INT64, {n})
          .Output(out, count * ElementSize(x.type), type, size)
          .AttrInt("begin_mask", 0)
          .AttrInt("end_mask", end_mask)
          .Run(run.stream);
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
