// Gather placed on CANN. The indices are a host input (ORT keeps them in CPU memory): the kernel
// checks every index against the axis (ONNX: [-size, size), negative ones counted from the end) and
// fails naming the first bad one, as the CPU EP does. What it launches (cann_soc_table.json "placed"):
// - indices that name a run of consecutive positions (a scalar index is a run of one, as torch's
//   select exports): one CANN Slice of the run along the axis; its bytes are the gather's output
//   (the index dims replace the axis in row-major order). A full run is a device copy. Placement's
//   "default" route: constant indices that are a run.
// - other indices (an embedding's token ids): x viewed as [outer, size, inner], the normalised
//   indices as int32 [1, n, 1] copied to the run's scratch, CANN Expand to [outer, n, inner]
//   (skipped when that is already their shape) and CANN GatherElementsV2 along dim 1 (torch.gather:
//   x float32/float16/bfloat16/int32, int32 index; hicann/ops-nn index/gather_elements_v2; the
//   general CANN GatherV2 is Ascend 950 only). The host-to-device copy waits for the stream (its
//   source is freed on return); the indices were checked on the host, so the device cannot fault
//   on them. Placement's "indices" route (indices computed at run time, or constant ones that are
//   no run) lists Slice too: a run met at run time takes it.
// An empty output launches nothing.
#include <cstdint>
#include <string>

#include "cann/sequence_kernel.h"
#include "placed/common/placed_op.h"

namespace ortops::placed::gather {
namespace {

bool GathersElements(ONNXTensorElementDataType type) {
  return type == kF32 || type == kF16 || type == kBF16 || type == kI32;
}

class GatherKernel : public PlacedKernel {
 public:
  GatherKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status) : PlacedKernel(info, op, status) {
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
    bool run_of_positions = true;
    for (size_t k = 0; k < indices.size(); ++k) {
      const int64_t i = indices[k] < 0 ? indices[k] + dim : indices[k];
      if (i < 0 || i >= dim) {
        return Fail("index " + std::to_string(indices[k]) + " is out of range [" + std::to_string(-dim) + ", " +
                    std::to_string(dim - 1) + "] for axis " + std::to_string(axis) + " of data of shape " +
                    ShapeText(x.shape));
      }
      indices[k] = i;
      run_of_positions = run_of_positions && i == indices[0] + static_cast<int64_t>(k);
    }
    std::vector<int64_t> shape(x.shape.begin(), x.shape.begin() + axis);
    shape.insert(shape.end(), indices_view.shape.begin(), indices_view.shape.end());
    shape.insert(shape.end(), x.shape.begin() + axis + 1, x.shape.end());
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      if (!run_of_positions) return GatherAny(context, run, x, a, indices, out);
      if (ElementCount(shape) == x.count) return run.CopyOnDevice(out, x.data, Bytes(x));
      std::vector<int64_t> offsets(rank, 0), size(x.shape);
      offsets[a] = indices[0];
      size[a] = static_cast<int64_t>(indices.size());
      return LaunchSlice(run, x, offsets, size, out);
    });
  }

 private:
  // The "indices" route for normalised `indices` (each in [0, size of the axis)).
  OrtStatusPtr GatherAny(OrtKernelContext* context, CannRun& begun, const TensorView& x, size_t axis,
                         const std::vector<int64_t>& indices, void* out) const {
    ORTOPS_RETURN_IF_ERROR(RequireRoute(*begun.acl, "indices"));
    if (!GathersElements(x.type)) {
      return Fail(
          "indices that are not a run of consecutive positions need CANN GatherElementsV2, which takes "
          "float32, float16, bfloat16 or int32 data (not " +
          std::string(ElementTypeName(x.type)) + ")");
    }
    const int64_t size = x.shape[axis];
    if (size > INT32_MAX) return Fail("axis of " + std::to_string(size) + " positions is beyond int32 indices");
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      if (d < axis) outer *= x.shape[d];
      if (d > axis) inner *= x.shape[d];
    }
    const auto n = static_cast<int64_t>(indices.size());
    std::vector<int32_t> positions(indices.begin(), indices.end());  // each in [0, size) <= INT32_MAX
    const std::vector<int64_t> index_dims{1, n, 1}, gathered{outer, n, inner};
    const size_t index_bytes = positions.size() * sizeof(int32_t);
    const size_t expanded_bytes = static_cast<size_t>(outer * n * inner) * sizeof(int32_t);
    const bool expand = outer * inner != 1;
    cann::SequenceRun run;
    static_cast<CannRun&>(run) = begun;
    cann::ScratchLayout layout;
    const size_t index_at = layout.Add(index_bytes);
    const size_t expanded_at = layout.Add(expand ? expanded_bytes : 0);
    ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, x.memory, layout.size()));
    ORTOPS_RETURN_IF_ERROR(run.CopyFromHostAndWait(run.Scratch(index_at), positions.data(), index_bytes));
    void* index = run.Scratch(index_at);
    if (expand) {
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "Expand")
                                 .Input(index, index_bytes, ACL_INT32, index_dims)
                                 .ConstInput(gathered.data(), gathered.size() * sizeof(int64_t), ACL_INT64,
                                             {static_cast<int64_t>(gathered.size())})
                                 .Output(run.Scratch(expanded_at), expanded_bytes, ACL_INT32, gathered)
                                 .Run(run.stream));
      index = run.Scratch(expanded_at);
    }
    const aclDataType type = AclTypeOf(x.type);
    return AclOp(*run.acl, "GatherElementsV2")
        .Input(x.data, Bytes(x), type, {outer, size, inner})
        .Input(index, expanded_bytes, ACL_INT32, gathered)
        .Output(out, static_cast<size_t>(outer * n * inner) * ElementSize(x.type), type, gathered)
        .AttrInt("dim", 1)
        .Run(run.stream);
  }

  int64_t axis_ = 0;
  mutable cann::ScratchUser scratch_;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kF64, kI32, kI64, kBool}) {
    list.Add("Gather", {In(t), HostInts()}, {In(t)}, Make<GatherKernel>);
  }
}

}  // namespace ortops::placed::gather
