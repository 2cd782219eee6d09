// Gather whose indices are a run of consecutive positions (constant: the placement rule checks it;
// a scalar index is a run of one, as torch's select exports) placed on CANN: one CANN Slice of the
// run along the axis. The slice's bytes are the gather's output (the index dims replace the axis in
// row-major order), so the output gets them with its own shape. Indices are a host input; a full
// run is a device copy, an empty one launches nothing. (Arbitrary indices need CANN GatherV2,
// which hicann/ops-nn's README lists for Ascend 950 only.)
#include <string>

#include "placed/common/placed_op.h"

namespace ortops::placed::gather {
namespace {

class GatherRunKernel : public PlacedKernel {
 public:
  GatherRunKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status) {
    if (*status == nullptr) *status = ReadIntAttribute(info, name(), "axis", 0, &axis_);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, indices_view;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "data", &x));
    ORTOPS_RETURN_IF_ERROR(Input(context, 1, "indices", &indices_view));
    const size_t rank = x.shape.size();
    int64_t axis = 0;
    if (!NormalizeAxis(axis_, rank, &axis)) {
      return Fail("axis " + std::to_string(axis_) + " is out of range for data of shape " + ShapeText(x.shape));
    }
    std::vector<int64_t> indices;
    ORTOPS_RETURN_IF_ERROR(Ints(indices_view, "indices", &indices));
    const auto a = static_cast<size_t>(axis);
    const int64_t dim = x.shape[a];
    int64_t first = 0;
    for (size_t k = 0; k < indices.size(); ++k) {
      const int64_t i = indices[k] < 0 ? indices[k] + dim : indices[k];
      if (i < 0 || i >= dim) {
        return Fail("index " + std::to_string(indices[k]) + " is out of range [" + std::to_string(-dim) + ", " +
                    std::to_string(dim - 1) + "] for axis " + std::to_string(axis) + " of data of shape " +
                    ShapeText(x.shape));
      }
      if (k == 0) first = i;
      if (i != first + static_cast<int64_t>(k)) {
        return Fail("indices " + ShapeText(indices) + " are not consecutive positions (only a run of them is placed)");
      }
    }
    std::vector<int64_t> shape(x.shape.begin(), x.shape.begin() + axis);
    shape.insert(shape.end(), indices_view.shape.begin(), indices_view.shape.end());
    shape.insert(shape.end(), x.shape.begin() + axis + 1, x.shape.end());
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const size_t count = ElementCount(shape);
      if (count == x.count) return run.CopyOnDevice(out, x.data, Bytes(x));
      std::vector<int64_t> offsets(rank, 0), size(x.shape);
      offsets[a] = first;
      size[a] = static_cast<int64_t>(indices.size());
      return LaunchSlice(run, x, offsets, size, out);
    });
  }

 private:
  int64_t axis_ = 0;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kF64, kI32, kI64, kBool}) {
    list.Add("Gather", {In(t), HostInts()}, {In(t)}, Make<GatherRunKernel>);
  }
}

}  // namespace ortops::placed::gather
