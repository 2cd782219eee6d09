// Gather and GatherND placed on CANN. The indices are a host input (ORT keeps them in
// CPU memory): the kernel checks every index against its axis (ONNX: [-size, size), negative ones
// counted from the end) and fails naming the first bad one, as the CPU EP does. Both are a gather
// of positions along the middle axis of the data viewed as [outer, size, inner]: Gather's axis
// (outer, inner: the dims before and after it), GatherND's batch dims and the K dims after them
// flattened (outer 1, K the indices' last dim, a tuple's position row-major over them, offset by
// its batch's: batch_dims b takes the tuples of batch i from data[i], i row-major over the first b
// dims, which data and indices share). What it launches
// (cann_soc_table.json "placed"):
// - positions that are a run of consecutive ones (a scalar Gather index is a run of one, as torch's
//   select exports): one CANN Slice of the run; its bytes are the output (the index dims replace
//   the gathered dims in row-major order). A full run is a device copy. Gather's "default" route:
//   constant indices that are a run.
// - other positions (an embedding's token ids; the adaptive pooling's constant windows): the
//   positions as int32 [1, n, 1] copied to the run's scratch, CANN Expand to [outer, n, inner]
//   (skipped when that is already their shape) and CANN GatherElementsV2 along dim 1 (torch.gather:
//   x float32/float16/bfloat16/int32, int32 index; hicann/ops-nn index/gather_elements_v2; CANN's
//   GatherV2 and GatherNd are Ascend 950 only). The host-to-device copy waits for the stream (its
//   source is freed on return); the positions were checked on the host, so the device cannot fault
//   on them. Constant indices (an initializer: the adaptive pooling's windows) are copied once per
//   session, already expanded (placed/common/device_constant.h): later runs of the same data shape
//   launch GatherElementsV2 alone, with no copy and no stream synchronisation. Gather's "indices" route (indices
//   computed at run time, or constant ones that are no run) and GatherND's route list Slice too: a run met at run time
//   takes it.
// An empty output launches nothing.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cann/sequence_kernel.h"
#include "placed/common/device_constant.h"
#include "placed/common/placed_op.h"

namespace ortops::placed::gather {
namespace {

bool GathersElements(ONNXTensorElementDataType type) {
  return type == kF32 || type == kF16 || type == kBF16 || type == kI32;
}

// What both kernels launch for positions along the middle axis of x viewed as [outer, size, inner].
class PositionsKernel : public PlacedKernel {
 public:
  PositionsKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status), constant_indices_(*status == nullptr && IsConstantInput(info, 1)) {}

 protected:
  // Output 0 of `shape` ([outer, n, inner] elements) from `positions` (each in [0, size)).
  OrtStatusPtr GatherPositions(OrtKernelContext* context, const TensorView& x, int64_t outer, int64_t size,
                               int64_t inner, const std::vector<int64_t>& positions,
                               const std::vector<int64_t>& shape) const {
    bool run_of_positions = true;
    for (size_t k = 0; k < positions.size() && run_of_positions; ++k) {
      run_of_positions = positions[k] == positions[0] + static_cast<int64_t>(k);
    }
    const auto n = static_cast<int64_t>(positions.size());
    const std::vector<int64_t> view{outer, size, inner}, gathered{outer, n, inner};
    return OnOutput(context, shape, [&](CannRun& begun, void* out) -> OrtStatusPtr {
      if (run_of_positions) {
        if (n == size) return begun.CopyOnDevice(out, x.data, Bytes(x));
        TensorView viewed = x;
        viewed.shape = view;
        return LaunchSlice(begun, viewed, {0, positions[0], 0}, gathered, out);
      }
      ORTOPS_RETURN_IF_ERROR(RequireRoute(*begun.acl, route_of_positions_));
      if (!GathersElements(x.type)) {
        return Fail(
            "indices that are not a run of consecutive positions need CANN GatherElementsV2, which takes "
            "float32, float16, bfloat16 or int32 data (not " +
            std::string(ElementTypeName(x.type)) + ")");
      }
      if (size > INT32_MAX) return Fail("gathering from " + std::to_string(size) + " positions is beyond int32");
      std::vector<int32_t> narrow(positions.begin(), positions.end());  // each in [0, size) <= INT32_MAX
      const size_t index_bytes = narrow.size() * sizeof(int32_t);
      const size_t expanded_bytes = static_cast<size_t>(outer * n * inner) * sizeof(int32_t);
      if (constant_indices_ && expanded_bytes <= kMaxConstantBytes) {
        const void* cached = nullptr;
        ORTOPS_RETURN_IF_ERROR(
            constant_.Get(context, x.memory, begun, x.shape, [&] { return Expanded(narrow, outer, inner); }, &cached));
        if (cached != nullptr) return LaunchGatherElements(begun, x, view, cached, gathered, out);
      }
      const bool expand = outer * inner != 1;
      cann::SequenceRun run;
      static_cast<CannRun&>(run) = begun;
      cann::ScratchLayout layout;
      const size_t index_at = layout.Add(index_bytes);
      const size_t expanded_at = layout.Add(expand ? expanded_bytes : 0);
      ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, x.memory, layout.size()));
      ORTOPS_RETURN_IF_ERROR(run.CopyFromHostAndWait(run.Scratch(index_at), narrow.data(), index_bytes));
      void* index = run.Scratch(index_at);
      if (expand) {
        ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "Expand")
                                   .Input(index, index_bytes, ACL_INT32, {1, n, 1})
                                   .ConstInput(gathered.data(), gathered.size() * sizeof(int64_t), ACL_INT64,
                                               {static_cast<int64_t>(gathered.size())})
                                   .Output(run.Scratch(expanded_at), expanded_bytes, ACL_INT32, gathered)
                                   .Run(run.stream));
        index = run.Scratch(expanded_at);
      }
      return LaunchGatherElements(run, x, view, index, gathered, out);
    });
  }

  // The table route whose ops the Expand + GatherElementsV2 path needs (checked when it is taken).
  const char* route_of_positions_ = kDefaultRoute;

 private:
  // Constant positions expanded to more bytes than this are copied every run instead.
  static constexpr size_t kMaxConstantBytes = size_t{64} << 20;

  // The bytes of int32 [outer, n, inner] whose (o, j, i) is positions[j]: what CANN Expand makes.
  static std::vector<char> Expanded(const std::vector<int32_t>& positions, int64_t outer, int64_t inner) {
    std::vector<char> bytes(static_cast<size_t>(outer * inner) * positions.size() * sizeof(int32_t));
    char* at = bytes.data();
    for (int64_t o = 0; o < outer; ++o) {
      for (int32_t p : positions) {
        for (int64_t i = 0; i < inner; ++i, at += sizeof(int32_t)) std::memcpy(at, &p, sizeof(int32_t));
      }
    }
    return bytes;
  }

  static OrtStatusPtr LaunchGatherElements(const CannRun& run, const TensorView& x, const std::vector<int64_t>& view,
                                           const void* index, const std::vector<int64_t>& gathered, void* out) {
    size_t elements = 1;
    for (int64_t d : gathered) elements *= static_cast<size_t>(d);
    const aclDataType type = AclTypeOf(x.type);
    return AclOp(*run.acl, "GatherElementsV2")
        .Input(x.data, Bytes(x), type, view)
        .Input(index, elements * sizeof(int32_t), ACL_INT32, gathered)
        .Output(out, elements * ElementSize(x.type), type, gathered)
        .AttrInt("dim", 1)
        .Run(run.stream);
  }

  const bool constant_indices_;
  mutable DeviceConstant constant_;
  mutable cann::ScratchUser scratch_;
};

// Position `value` of an axis of `dim` (negative counted from the end), or false if out of range.
bool Position(int64_t value, int64_t dim, int64_t* position) {
  *position = value < 0 ? value + dim : value;
  return *position >= 0 && *position < dim;
}

std::string RangeText(int64_t dim) { return "[" + std::to_string(-dim) + ", " + std::to_string(dim - 1) + "]"; }

class GatherKernel : public PositionsKernel {
 public:
  GatherKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PositionsKernel(info, op, status) {
    route_of_positions_ = "indices";
    if (*status == nullptr) *status = ReadIntAttribute(info, name(), "axis", 0, &axis_);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, indices_view;
    int64_t axis = 0;
    ORTOPS_RETURN_IF_ERROR(DataIndicesAxis(context, axis_, &x, &indices_view, &axis));
    std::vector<int64_t> indices;
    ORTOPS_RETURN_IF_ERROR(Ints(indices_view, "indices", &indices));
    const auto a = static_cast<size_t>(axis);
    const int64_t dim = x.shape[a];
    std::vector<int64_t> positions(indices.size());
    for (size_t k = 0; k < indices.size(); ++k) {
      if (!Position(indices[k], dim, &positions[k])) {
        return Fail("index " + std::to_string(indices[k]) + " is out of range " + RangeText(dim) + " for axis " +
                    std::to_string(axis) + " of data of shape " + ShapeText(x.shape));
      }
    }
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      if (d < a) outer *= x.shape[d];
      if (d > a) inner *= x.shape[d];
    }
    std::vector<int64_t> shape(x.shape.begin(), x.shape.begin() + axis);
    shape.insert(shape.end(), indices_view.shape.begin(), indices_view.shape.end());
    shape.insert(shape.end(), x.shape.begin() + axis + 1, x.shape.end());
    return GatherPositions(context, x, outer, dim, inner, positions, shape);
  }

 private:
  int64_t axis_ = 0;
};

class GatherNdKernel : public PositionsKernel {
 public:
  GatherNdKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PositionsKernel(info, op, status) {
    if (*status != nullptr) return;
    if ((*status = ReadIntAttribute(info, name(), "batch_dims", 0, &batch_dims_)) != nullptr) return;
    if (batch_dims_ < 0) *status = Fail("batch_dims " + std::to_string(batch_dims_) + " must be >= 0");
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, indices_view;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "data", &x));
    ORTOPS_RETURN_IF_ERROR(Input(context, 1, "indices", &indices_view));
    const std::vector<int64_t>& ishape = indices_view.shape;
    const auto b = static_cast<size_t>(batch_dims_);
    const size_t k = ishape.empty() ? 0 : static_cast<size_t>(ishape.back());
    if (ishape.size() < b + 1 || x.shape.size() < b || k == 0 || k > x.shape.size() - b) {
      return Fail("indices of shape " + ShapeText(ishape) + " for data of shape " + ShapeText(x.shape) +
                  " and batch_dims " + std::to_string(b) + ": expected rank > batch_dims and a last dim in [1, " +
                  std::to_string(static_cast<int64_t>(x.shape.size()) - batch_dims_) + "]");
    }
    for (size_t d = 0; d < b; ++d) {
      if (ishape[d] != x.shape[d]) {
        return Fail("indices of shape " + ShapeText(ishape) + " and data of shape " + ShapeText(x.shape) +
                    " differ in the first batch_dims (" + std::to_string(b) + ") dims");
      }
    }
    std::vector<int64_t> indices;
    ORTOPS_RETURN_IF_ERROR(Ints(indices_view, "indices", &indices));
    int64_t batches = 1, per_batch = 1, inner = 1;  // data: [batches, per_batch (the K dims), inner]
    for (size_t d = 0; d < x.shape.size(); ++d) (d < b ? batches : d < b + k ? per_batch : inner) *= x.shape[d];
    std::vector<int64_t> positions(indices.size() / k);
    const size_t tuples_per_batch = batches == 0 ? 0 : positions.size() / static_cast<size_t>(batches);
    for (size_t t = 0; t < positions.size(); ++t) {
      int64_t flat = static_cast<int64_t>(t / tuples_per_batch);  // its batch
      for (size_t c = 0; c < k; ++c) {
        const int64_t dim = x.shape[b + c];
        int64_t p = 0;
        if (!Position(indices[t * k + c], dim, &p)) {
          return Fail("index " + std::to_string(indices[t * k + c]) + " (tuple " + std::to_string(t) +
                      ") is out of range " + RangeText(dim) + " for dim " + std::to_string(b + c) +
                      " of data of shape " + ShapeText(x.shape));
        }
        flat = flat * dim + p;
      }
      positions[t] = flat;
    }
    const int64_t size = batches * per_batch;
    std::vector<int64_t> shape(ishape.begin(), ishape.end() - 1);
    shape.insert(shape.end(), x.shape.begin() + static_cast<std::ptrdiff_t>(b + k), x.shape.end());
    return GatherPositions(context, x, 1, size, inner, positions, shape);
  }

 private:
  int64_t batch_dims_ = 0;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kF64, kI32, kI64, kBool}) {
    list.Add("Gather", {In(t), HostInts()}, {In(t)}, Make<GatherKernel>);
  }
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kI32}) {
    list.Add("GatherND", {In(t), HostInts()}, {In(t)}, Make<GatherNdKernel>);
  }
}

}  // namespace ortops::placed::gather
