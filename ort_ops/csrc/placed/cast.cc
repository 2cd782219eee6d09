// Cast placed on CANN: CANN Cast (dst_type = the ACL data type, which is CANN's ge::DataType for
// these types). One op name per destination type (CastToFloat, CastToInt64, ...; attribute `to`
// kept): ORT infers a custom op's output type from its input types alone, so one name with
// several destinations would get the first one's type.
#include <string>

#include "placed/common/placed_op.h"

namespace ortops::placed::cast {
namespace {

constexpr OpOfOutputType kDestinations[] = {
    {"CastToFloat", kF32}, {"CastToFloat16", kF16}, {"CastToBFloat16", kBF16}, {"CastToDouble", kF64},
    {"CastToInt32", kI32}, {"CastToInt64", kI64},   {"CastToBool", kBool},
};

class CastKernel : public PlacedKernel {
 public:
  CastKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status, kDefaultRoute, "Cast"), to_(op.outputs()[0].type) {
    if (*status != nullptr) return;
    int64_t to = 0;
    if ((*status = ReadIntAttribute(info, name(), "to", static_cast<int64_t>(to_), &to)) != nullptr) return;
    if (to != static_cast<int64_t>(to_)) {
      *status = Fail("attribute to = " + std::to_string(to) + " does not match the op's destination type " +
                     std::to_string(static_cast<int>(to_)));
    }
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "input", &x));
    return OnOutput(context, x.shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const size_t out_bytes = x.count * ElementSize(to_);
      if (x.type == to_) return run.CopyOnDevice(out, x.data, out_bytes);
      return AclOp(*run.acl, "Cast")
          .Input(x.data, Bytes(x), AclTypeOf(x.type), x.shape)
          .Output(out, out_bytes, AclTypeOf(to_), x.shape)
          .AttrInt("dst_type", AclTypeOf(to_))
          .Run(run.stream);
    });
  }

 private:
  ONNXTensorElementDataType to_;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (const OpOfOutputType& d : kDestinations) {
    for (ONNXTensorElementDataType from : {kF32, kF16, kBF16, kF64, kI32, kI64, kBool}) {
      list.Add(d.op, {In(from)}, {In(d.type)}, Make<CastKernel>);
    }
  }
}

}  // namespace ortops::placed::cast
