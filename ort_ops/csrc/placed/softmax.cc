// Softmax and LogSoftmax (opset 13+: one axis, default -1) placed on CANN: SoftmaxV2 and
// LogSoftmaxV2 (axes = [axis]; the CANN op of each: ort_ops/cann_soc_table.json "placed").
#include "placed/common/placed_op.h"

namespace ortops::placed::softmax {
namespace {

class SoftmaxKernel : public PlacedKernel {
 public:
  SoftmaxKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status), acl_op_(Launch(0)) {
    if (*status == nullptr) *status = ReadIntAttribute(info, name(), "axis", -1, &axis_);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "input", &x));
    int64_t axis = 0;
    ORTOPS_RETURN_IF_ERROR(AxisOf(axis_, x, "input", &axis));
    return OnOutput(context, x.shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const aclDataType type = AclTypeOf(x.type);
      return AclOp(*run.acl, acl_op_)
          .Input(x.data, Bytes(x), type, x.shape)
          .Output(out, Bytes(x), type, x.shape)
          .AttrInts("axes", {axis})
          .Run(run.stream);
    });
  }

 private:
  const char* acl_op_;
  int64_t axis_ = -1;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16}) {
    for (const char* op : {"Softmax", "LogSoftmax"}) list.Add(op, {In(t)}, {In(t)}, Make<SoftmaxKernel>);
  }
}

}  // namespace ortops::placed::softmax
