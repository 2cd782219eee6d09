// GatherElements and ScatterElements placed on CANN: CANN's ops of the same names (GatherElements:
// x, index, attr dim; ScatterElements: data, indices, updates, attrs axis, reduction). CANN follows
// torch.gather / scatter: indices must lie in [0, size) (ONNX also allows [-size, 0)); the device
// reports others as a fault at the next synchronisation. The kernels synchronise right after the
// launch so that such a fault fails this node by name (SyncForDeviceFaults): the indices live on
// the device, reading them on the host would need the same wait and a copy.
#include <string>

#include "placed/common/placed_op.h"

namespace ortops::placed::gather_scatter {
namespace {

class GatherElementsKernel : public PlacedKernel {
 public:
  GatherElementsKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status) {
    if (*status == nullptr) *status = ReadIntAttribute(info, name(), "axis", 0, &axis_);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, index;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "data", &x));
    ORTOPS_RETURN_IF_ERROR(Input(context, 1, "indices", &index));
    int64_t axis = 0;
    if (!NormalizeAxis(axis_, x.shape.size(), &axis)) {
      return Fail("axis " + std::to_string(axis_) + " is out of range for data of shape " + ShapeText(x.shape));
    }
    if (index.shape.size() != x.shape.size()) {
      return Fail("indices " + ShapeText(index.shape) + " and data " + ShapeText(x.shape) + " differ in rank");
    }
    return OnOutput(context, index.shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const aclDataType type = AclTypeOf(x.type);
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "GatherElements")
                                 .Input(x.data, Bytes(x), type, x.shape)
                                 .Input(index.data, Bytes(index), AclTypeOf(index.type), index.shape)
                                 .Output(out, index.count * ElementSize(x.type), type, index.shape)
                                 .AttrInt("dim", axis)
                                 .Run(run.stream));
      return SyncForDeviceFaults(run, "GatherElements");
    });
  }

 private:
  int64_t axis_ = 0;
};

class ScatterElementsKernel : public PlacedKernel {
 public:
  ScatterElementsKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status) {
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
    if (!NormalizeAxis(axis_, data.shape.size(), &axis)) {
      return Fail("axis " + std::to_string(axis_) + " is out of range for data of shape " + ShapeText(data.shape));
    }
    if (indices.shape != updates.shape || indices.shape.size() != data.shape.size()) {
      return Fail("indices " + ShapeText(indices.shape) + " and updates " + ShapeText(updates.shape) +
                  " must have one shape of data's rank (" + ShapeText(data.shape) + ")");
    }
    return OnOutput(context, data.shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const aclDataType type = AclTypeOf(data.type);
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "ScatterElements")
                                 .Input(data.data, Bytes(data), type, data.shape)
                                 .Input(indices.data, Bytes(indices), AclTypeOf(indices.type), indices.shape)
                                 .Input(updates.data, Bytes(updates), type, updates.shape)
                                 .Output(out, Bytes(data), type, data.shape)
                                 .AttrInt("axis", axis)
                                 .AttrString("reduction", reduction_.c_str())
                                 .Run(run.stream));
      return SyncForDeviceFaults(run, "ScatterElements");
    });
  }

 private:
  int64_t axis_ = 0;
  std::string reduction_;
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
