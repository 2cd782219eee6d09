// Unary ops placed on CANN, each one CANN op of the same meaning: Elu (CANN Elu, scale and
// input_scale 1), Exp (Exp, base e), Log, Neg, Abs, Sqrt, Reciprocal, Relu, Sigmoid, Tanh, Not
// (LogicalNot), Gelu (GeluV2, its approximate "none" or "tanh" passed on).
#include <cstring>
#include <string>

#include "placed/common/placed_op.h"

namespace ortops::placed::unary {
namespace {

// The ONNX ops (the CANN op computing each: ort_ops/cann_soc_table.json "placed").
constexpr const char* kFloat[] = {"Elu",        "Exp",  "Log",     "Neg",  "Abs", "Sqrt",
                                  "Reciprocal", "Relu", "Sigmoid", "Tanh", "Gelu"};
constexpr const char* kInteger[] = {"Neg", "Abs"};
constexpr const char* kLogical[] = {"Not"};

class UnaryKernel : public PlacedKernel {
 public:
  UnaryKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status), acl_op_(Launch(0)) {
    if (*status != nullptr) return;
    is_elu_ = std::strcmp(op.GetName(), "Elu") == 0;
    is_gelu_ = std::strcmp(op.GetName(), "Gelu") == 0;
    if (is_elu_) *status = ReadFloatAttribute(info, name(), "alpha", 1.0f, &alpha_);
    if (is_gelu_) {
      *status = ReadStringAttribute(info, name(), "approximate", "none", &approximate_);
      if (*status == nullptr && approximate_ != "none" && approximate_ != "tanh") {
        *status = Fail("attribute approximate is \"" + approximate_ + "\", expected \"none\" or \"tanh\"");
      }
    }
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "X", &x));
    return OnOutput(context, x.shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      AclOp op(*run.acl, acl_op_);
      op.Input(x.data, Bytes(x), AclTypeOf(x.type), x.shape).Output(out, Bytes(x), AclTypeOf(x.type), x.shape);
      if (is_elu_) op.AttrFloat("alpha", alpha_).AttrFloat("scale", 1.0f).AttrFloat("input_scale", 1.0f);
      if (is_gelu_) op.AttrString("approximate", approximate_.c_str());
      if (std::strcmp(acl_op_, "Exp") == 0 || std::strcmp(acl_op_, "Log") == 0) {
        op.AttrFloat("base", -1.0f).AttrFloat("scale", 1.0f).AttrFloat("shift", 0.0f);  // natural exp/log
      }
      return op.Run(run.stream);
    });
  }

 private:
  const char* acl_op_;
  bool is_elu_ = false;
  bool is_gelu_ = false;
  float alpha_ = 1.0f;
  std::string approximate_;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16}) {
    for (const char* m : kFloat) list.Add(m, {In(t)}, {In(t)}, Make<UnaryKernel>);
  }
  for (ONNXTensorElementDataType t : {kI32, kI64}) {
    for (const char* m : kInteger) list.Add(m, {In(t)}, {In(t)}, Make<UnaryKernel>);
  }
  for (const char* m : kLogical) list.Add(m, {In(kBool)}, {In(kBool)}, Make<UnaryKernel>);
}

}  // namespace ortops::placed::unary
