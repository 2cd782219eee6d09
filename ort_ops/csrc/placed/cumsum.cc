// CumSum (11, 14) placed on CANN: one CANN Cumsum (hicann/ops-math math/cumsum: op_graph/cumsum_proto.h, x and a
// one-element int32/int64 axis; attrs exclusive and reverse, ONNX's meaning), the axis read on the host (a constant
// or a host input) and passed as a constant input. CANN accumulates float16 in float32 (op_kernel/cumsum_apt.cpp's
// PromoteType), as ORT's CPU EP does (measured: one rounding per output); the simulator sums sequentially, as the
// CPU EP; CANN's arch35 AI Core kernel sums by a tree (floats may differ in the last bits on hardware). Integers wrap.
#include <cstdint>
#include <string>
#include <vector>

#include "placed/common/placed_op.h"

namespace ortops::placed::cumsum {
namespace {

class CumSumKernel : public PlacedKernel {
 public:
  CumSumKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status) : PlacedKernel(info, op, status) {
    if (*status != nullptr) return;
    int64_t exclusive = 0, reverse = 0;
    *status = ReadIntAttribute(info, name(), "exclusive", 0, &exclusive);
    if (*status == nullptr) *status = ReadIntAttribute(info, name(), "reverse", 0, &reverse);
    exclusive_ = exclusive != 0;
    reverse_ = reverse != 0;
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, axis_view;
    std::vector<int64_t> axes;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "x", &x));
    ORTOPS_RETURN_IF_ERROR(InputInts(context, 1, "axis", &axes, &axis_view));
    if (axes.size() != 1 || axis_view.shape.size() > 1) {
      return Fail("axis must be a 0-D tensor (one element), got shape " + ShapeText(axis_view.shape));
    }
    int64_t axis = 0;
    ORTOPS_RETURN_IF_ERROR(AxisOf(axes[0], x, "x", &axis));
    return OnOutput(context, x.shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const aclDataType type = AclTypeOf(x.type);
      return AclOp(*run.acl, "Cumsum")
          .Input(x.data, Bytes(x), type, x.shape)
          .ConstInput(&axis, sizeof(axis), ACL_INT64, {1})
          .Output(out, Bytes(x), type, x.shape)
          .AttrBool("exclusive", exclusive_)
          .AttrBool("reverse", reverse_)
          .Run(run.stream);
    });
  }

 private:
  bool exclusive_ = false;
  bool reverse_ = false;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kI32, kI64}) {
    for (ONNXTensorElementDataType a : {kI32, kI64}) {
      list.Add("CumSum", {In(t), IoSpec{a, false, true}}, {In(t)}, Make<CumSumKernel>);
    }
  }
}

}  // namespace ortops::placed::cumsum
