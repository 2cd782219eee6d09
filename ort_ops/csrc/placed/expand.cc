// Expand placed on CANN: CANN Expand (ONNX's broadcast of the input with the shape input) given
// the broadcast output shape as a constant input. The shape is a host input (ORT keeps it in CPU
// memory). An output of the input's shape (no broadcast, or a rank-0 one: CANN refuses an empty
// shape input) is a device copy; an empty output launches nothing.
#include "placed/common/placed_op.h"

namespace ortops::placed::expand {
namespace {

class ExpandKernel : public PlacedKernel {
 public:
  using PlacedKernel::PlacedKernel;

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x;
    std::vector<int64_t> requested, shape;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "input", &x));
    ORTOPS_RETURN_IF_ERROR(InputInts(context, 1, "shape", &requested));
    if (!BroadcastShapes(x.shape, requested, &shape)) {
      return Fail("input of shape " + ShapeText(x.shape) + " does not broadcast with shape " + ShapeText(requested));
    }
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      if (shape == x.shape) return run.CopyOnDevice(out, x.data, Bytes(x));
      const aclDataType type = AclTypeOf(x.type);
      return AclOp(*run.acl, "Expand")
          .Input(x.data, Bytes(x), type, x.shape)
          .ConstInput(shape.data(), shape.size() * sizeof(int64_t), ACL_INT64, {static_cast<int64_t>(shape.size())})
          .Output(out, ElementCount(shape) * ElementSize(x.type), type, shape)
          .Run(run.stream);
    });
  }
};

}  // namespace

// The dtypes of CANN Expand's prototype (hicann/ops-math math/expand/op_graph/expand_proto.h).
void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kI32, kI64, kI8, kU8, kBool}) {
    list.Add("Expand", {In(t), HostInts()}, {In(t)}, Make<ExpandKernel>);
  }
}

}  // namespace ortops::placed::expand
