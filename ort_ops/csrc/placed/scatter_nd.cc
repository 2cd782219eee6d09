// ScatterND placed on CANN. Reduction "add" (opset >= 16; the embedding backward torch exports): one
// CANN ScatterNonAliasingAdd (x, indices, updates -> y = a copy of x, then y[indices[i]] +=
// updates[i] in index order, repeated indices accumulating; hicann/ops-nn
// index/scatter_non_aliasing_add). Reduction "none" (torch's index_put / x[idx] = v; route
// "update"): a device copy of data, then CANN ScatterNdUpdate on it in place (var, indices,
// updates -> var; hicann/ops-nn index/scatter_nd_update; ONNX leaves repeated indices undefined).
// CANN takes indices in [0, size) and does not check them; ONNX
// also allows negative ones, which NormalizeNegativeIndices maps there first (Less, Add, SelectV2
// with each tuple entry's dim). The simulator, like a device, faults on others, and the kernel
// synchronises right after the launch so that such a fault fails this node by name
// (SyncForDeviceFaults). No updates: the output is a device copy of data.
#include <string>

#include "cann/sequence_kernel.h"
#include "placed/common/placed_op.h"

namespace ortops::placed::scatter_nd {
namespace {

class ScatterNdKernel : public PlacedKernel {
 public:
  ScatterNdKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status) {
    if (*status != nullptr) return;
    std::string reduction;
    if ((*status = ReadStringAttribute(info, name(), "reduction", "none", &reduction)) != nullptr) return;
    if (reduction != "add" && reduction != "none") {
      *status = Fail("reduction " + reduction +
                     " is not supported (placed: add, CANN ScatterNonAliasingAdd; none, CANN ScatterNdUpdate)");
    }
    add_ = reduction == "add";
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView data, indices, updates;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "data", &data));
    ORTOPS_RETURN_IF_ERROR(Input(context, 1, "indices", &indices));
    ORTOPS_RETURN_IF_ERROR(Input(context, 2, "updates", &updates));
    const size_t k = indices.shape.empty() ? 0 : static_cast<size_t>(indices.shape.back());
    if (indices.shape.empty() || k == 0 || k > data.shape.size()) {
      return Fail("indices of shape " + ShapeText(indices.shape) + " for data of shape " + ShapeText(data.shape) +
                  ": expected a last dim in [1, " + std::to_string(data.shape.size()) + "]");
    }
    std::vector<int64_t> expected(indices.shape.begin(), indices.shape.end() - 1);
    expected.insert(expected.end(), data.shape.begin() + static_cast<std::ptrdiff_t>(k), data.shape.end());
    if (updates.shape != expected) {
      return Fail("updates of shape " + ShapeText(updates.shape) + ", expected " + ShapeText(expected) +
                  " (indices' dims but the last, then data's dims from " + std::to_string(k) + ")");
    }
    if (add_ && data.type != kF32 && data.type != kF16 && data.type != kI32) {
      return Fail("reduction add of " + std::string(ElementTypeName(data.type)) +
                  " is not supported (CANN ScatterNonAliasingAdd: float32, float16, int32)");
    }
    return OnOutput(context, data.shape, [&](CannRun& begun, void* out) -> OrtStatusPtr {
      if (updates.count == 0) return begun.CopyOnDevice(out, data.data, Bytes(data));
      cann::SequenceRun run;
      static_cast<CannRun&>(run) = begun;
      ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, data.memory, NormalizingScratchBytes(indices)));
      void* tuples = nullptr;
      const std::vector<int64_t> sizes(data.shape.begin(), data.shape.begin() + static_cast<std::ptrdiff_t>(k));
      ORTOPS_RETURN_IF_ERROR(NormalizeNegativeIndices(run, indices, sizes, run.Scratch(0), &tuples));
      const aclDataType type = AclTypeOf(data.type);
      const char* op = add_ ? "ScatterNonAliasingAdd" : "ScatterNdUpdate";
      if (!add_) {
        ORTOPS_RETURN_IF_ERROR(RequireRoute(*run.acl, "update"));
        ORTOPS_RETURN_IF_ERROR(run.CopyOnDevice(out, data.data, Bytes(data)));
      }
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, op)
                                 .Input(add_ ? data.data : out, Bytes(data), type, data.shape)
                                 .Input(tuples, Bytes(indices), AclTypeOf(indices.type), indices.shape)
                                 .Input(updates.data, Bytes(updates), type, updates.shape)
                                 .Output(out, Bytes(data), type, data.shape)
                                 .Run(run.stream));
      return SyncForDeviceFaults(run, op);
    });
  }

 private:
  bool add_ = false;
  mutable cann::ScratchUser scratch_;
};

}  // namespace

// CANN ScatterNdUpdate's types (its Atlas A2/A3 configuration's that ONNX has), of which
// ScatterNonAliasingAdd takes float32, float16, int32; indices int64 (ONNX's).
void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kI32, kI64, kBool}) {
    list.Add("ScatterND", {In(t), In(kI64), In(t)}, {In(t)}, Make<ScatterNdKernel>);
  }
}

}  // namespace ortops::placed::scatter_nd
