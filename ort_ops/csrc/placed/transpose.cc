// Transpose placed on CANN: CANN Transpose with perm as a constant input (default: reversed axes).
#include "placed/common/placed_op.h"

namespace ortops::placed::transpose {
namespace {

class TransposeKernel : public PlacedKernel {
 public:
  TransposeKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status) {
    if (*status == nullptr) *status = ReadIntsAttribute(info, name(), "perm", {}, &perm_);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "data", &x));
    const size_t rank = x.shape.size();
    std::vector<int64_t> perm = perm_;
    if (perm.empty()) {
      for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
    }
    if (perm.size() != rank)
      return Fail("perm " + ShapeText(perm) + " does not fit data of shape " + ShapeText(x.shape));
    std::vector<bool> seen(rank, false);
    std::vector<int64_t> shape(rank, 0);
    for (size_t i = 0; i < rank; ++i) {
      int64_t axis = 0;
      if (!NormalizeAxis(perm[i], rank, &axis) || seen[static_cast<size_t>(axis)]) {
        return Fail("perm " + ShapeText(perm) + " is not a permutation of " + std::to_string(rank) + " axes");
      }
      seen[static_cast<size_t>(axis)] = true;
      perm[i] = axis;
      shape[i] = x.shape[static_cast<size_t>(axis)];
    }
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      if (rank <= 1) return run.CopyOnDevice(out, x.data, Bytes(x));
      const aclDataType type = AclTypeOf(x.type);
      return AclOp(*run.acl, "Transpose")
          .Input(x.data, Bytes(x), type, x.shape)
          .ConstInput(perm.data(), perm.size() * sizeof(int64_t), ACL_INT64, {static_cast<int64_t>(rank)})
          .Output(out, Bytes(x), type, shape)
          .Run(run.stream);
    });
  }

 private:
  std::vector<int64_t> perm_;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kF64, kI32, kI64, kBool}) {
    list.Add("Transpose", {In(t)}, {In(t)}, Make<TransposeKernel>);
  }
}

}  // namespace ortops::placed::transpose
