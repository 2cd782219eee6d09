// GatherElements and ScatterElements placed on CANN. CANN follows torch.gather / scatter: indices
// must lie in [0, size) (ONNX also allows [-size, 0), which NormalizeNegativeIndices maps there first:
// Less, Add, SelectV2; GatherElementsV2 takes them as they are); the device reports others as a fault
// at the next synchronisation. The kernels synchronise right after the launch so that such a fault fails
// this node by name (SyncForDeviceFaults): the indices live on the device, reading them on the host
// would need the same wait and a copy. Two routes each, the first the SoC has (RouteOnSoc, in the
// order of the placement rule):
// - "default" (Ascend 950): CANN's ops of the same names (GatherElements: x, index, attr dim;
//   ScatterElements: data, indices, updates, attrs axis, reduction).
// - "v2" (Atlas A2/A3): GatherElementsV2 takes int32 indices (hicann/ops-nn index/gather_elements_v2;
//   negative ones count from the end there): int64 indices are first clamped to [-(size + 1), size]
//   with ClipByValueV2 (an index out of range stays out of range) and cast to int32 with Cast, so the
//   narrowing is exact, in the run's scratch. ScatterElementsV2 updates its input in place
//   (index/scatter_elements_v2: GE names input and output `var`): the output is first a device copy
//   of data.
#include <string>

#include "cann/sequence_kernel.h"
#include "placed/common/placed_op.h"

namespace ortops::placed::gather_scatter {
namespace {

constexpr const char* kV2 = "v2";

// The route of `onnx_op` for data of `type`: the V2 ops take every registered type but int64.
const char* RouteFor(const char* onnx_op, ONNXTensorElementDataType type) {
  return type == kI64 ? kDefaultRoute : RouteOnSoc(onnx_op, {kDefaultRoute, kV2});
}

class GatherElementsKernel : public PlacedKernel {
 public:
  GatherElementsKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : GatherElementsKernel(info, op, status, RouteFor("GatherElements", op.inputs()[0].type)) {}
  GatherElementsKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status, const char* route)
      : PlacedKernel(info, op, status, route), v2_(std::string(route) == kV2) {
    if (*status == nullptr) *status = ReadIntAttribute(info, name(), "axis", 0, &axis_);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, index;
    int64_t axis = 0;
    ORTOPS_RETURN_IF_ERROR(DataIndicesAxis(context, axis_, &x, &index, &axis));
    if (index.shape.size() != x.shape.size()) {
      return Fail("indices " + ShapeText(index.shape) + " and data " + ShapeText(x.shape) + " differ in rank");
    }
    return OnOutput(context, index.shape, [&](CannRun& begun, void* out) -> OrtStatusPtr {
      if (v2_) return GatherV2(context, begun, x, index, axis, out);
      cann::SequenceRun run;
      static_cast<CannRun&>(run) = begun;
      ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, x.memory, NormalizingScratchBytes(index)));
      void* positions = nullptr;
      ORTOPS_RETURN_IF_ERROR(
          NormalizeNegativeIndices(run, index, {x.shape[static_cast<size_t>(axis)]}, run.Scratch(0), &positions));
      const aclDataType type = AclTypeOf(x.type);
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "GatherElements")
                                 .Input(x.data, Bytes(x), type, x.shape)
                                 .Input(positions, Bytes(index), AclTypeOf(index.type), index.shape)
                                 .Output(out, index.count * ElementSize(x.type), type, index.shape)
                                 .AttrInt("dim", axis)
                                 .Run(run.stream));
      return SyncForDeviceFaults(run, "GatherElements");
    });
  }

 private:
  // The "v2" route: int64 indices clamped and cast to int32 in the scratch, then GatherElementsV2.
  OrtStatusPtr GatherV2(OrtKernelContext* context, CannRun& begun, const TensorView& x, const TensorView& index,
                        int64_t axis, void* out) const {
    const int64_t size = x.shape[static_cast<size_t>(axis)];
    if (size >= INT32_MAX) return Fail("axis of " + std::to_string(size) + " positions is beyond int32 indices");
    cann::SequenceRun run;
    static_cast<CannRun&>(run) = begun;
    const void* index32 = index.data;
    if (index.type == kI64) {
      cann::ScratchLayout layout;
      const size_t clamped_at = layout.Add(index.count * sizeof(int64_t));
      const size_t narrow_at = layout.Add(index.count * sizeof(int32_t));
      ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, x.memory, layout.size()));
      const int64_t low = -(size + 1), high = size;
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "ClipByValueV2")
                                 .Input(index.data, Bytes(index), ACL_INT64, index.shape)
                                 .ConstInput(&low, sizeof low, ACL_INT64, {})
                                 .ConstInput(&high, sizeof high, ACL_INT64, {})
                                 .Output(run.Scratch(clamped_at), Bytes(index), ACL_INT64, index.shape)
                                 .Run(run.stream));
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "Cast")
                                 .Input(run.Scratch(clamped_at), Bytes(index), ACL_INT64, index.shape)
                                 .Output(run.Scratch(narrow_at), index.count * sizeof(int32_t), ACL_INT32, index.shape)
                                 .AttrInt("dst_type", ACL_INT32)
                                 .Run(run.stream));
      index32 = run.Scratch(narrow_at);
    }
    const aclDataType type = AclTypeOf(x.type);
    ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "GatherElementsV2")
                               .Input(x.data, Bytes(x), type, x.shape)
                               .Input(index32, index.count * sizeof(int32_t), ACL_INT32, index.shape)
                               .Output(out, index.count * ElementSize(x.type), type, index.shape)
                               .AttrInt("dim", axis)
                               .Run(run.stream));
    return SyncForDeviceFaults(run, "GatherElementsV2");
  }

  int64_t axis_ = 0;
  bool v2_ = false;
  mutable cann::ScratchUser scratch_;
};

class ScatterElementsKernel : public PlacedKernel {
 public:
  ScatterElementsKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : ScatterElementsKernel(info, op, status, RouteFor("ScatterElements", op.inputs()[0].type)) {}
  ScatterElementsKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status, const char* route)
      : PlacedKernel(info, op, status, route), v2_(std::string(route) == kV2) {
    if (*status != nullptr) return;
    if ((*status = ReadIntAttribute(info, name(), "axis", 0, &axis_)) != nullptr) return;
    if ((*status = ReadStringAttribute(info, name(), "reduction", "none", &reduction_)) != nullptr) return;
    if (reduction_ != "none" && reduction_ != "add" && reduction_ != "mul") {
      *status = Fail("reduction " + reduction_ + " is not supported (CANN ScatterElements: none, add, mul)");
    }
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView data, indices, updates;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "data", &data));
    ORTOPS_RETURN_IF_ERROR(Input(context, 1, "indices", &indices));
    ORTOPS_RETURN_IF_ERROR(Input(context, 2, "updates", &updates));
    int64_t axis = 0;
    ORTOPS_RETURN_IF_ERROR(AxisOf(axis_, data, "data", &axis));
    if (indices.shape != updates.shape || indices.shape.size() != data.shape.size()) {
      return Fail("indices " + ShapeText(indices.shape) + " and updates " + ShapeText(updates.shape) +
                  " must have one shape of data's rank (" + ShapeText(data.shape) + ")");
    }
    return OnOutput(context, data.shape, [&](CannRun& begun, void* out) -> OrtStatusPtr {
      cann::SequenceRun run;
      static_cast<CannRun&>(run) = begun;
      ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, data.memory, NormalizingScratchBytes(indices)));
      void* positions = nullptr;
      ORTOPS_RETURN_IF_ERROR(
          NormalizeNegativeIndices(run, indices, {data.shape[static_cast<size_t>(axis)]}, run.Scratch(0), &positions));
      const aclDataType type = AclTypeOf(data.type);
      const char* op = v2_ ? "ScatterElementsV2" : "ScatterElements";
      if (v2_) ORTOPS_RETURN_IF_ERROR(run.CopyOnDevice(out, data.data, Bytes(data)));
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, op)
                                 .Input(v2_ ? out : data.data, Bytes(data), type, data.shape)
                                 .Input(positions, Bytes(indices), AclTypeOf(indices.type), indices.shape)
                                 .Input(updates.data, Bytes(updates), type, updates.shape)
                                 .Output(out, Bytes(data), type, data.shape)
                                 .AttrInt("axis", axis)
                                 .AttrString("reduction", reduction_.c_str())
                                 .Run(run.stream));
      return SyncForDeviceFaults(run, op);
    });
  }

 private:
  int64_t axis_ = 0;
  bool v2_ = false;
  std::string reduction_;
  mutable cann::ScratchUser scratch_;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kI32, kI64}) {
    for (ONNXTensorElementDataType i : {kI64, kI32}) {
      list.Add("GatherElements", {In(t), In(i)}, {In(t)}, Make<GatherElementsKernel>)
          .Add("ScatterElements", {In(t), In(i), In(t)}, {In(t)}, Make<ScatterElementsKernel>);
    }
  }
}

}  // namespace ortops::placed::gather_scatter
