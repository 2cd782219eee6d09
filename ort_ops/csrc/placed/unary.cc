// Unary ops placed on CANN, each one CANN op of the same meaning: Elu (CANN Elu, scale and
// input_scale 1), Exp (Exp, base e), Log, Neg, Abs, Sqrt, Reciprocal, Relu, Sigmoid, Tanh, Not
// (LogicalNot), Gelu (GeluV2, its approximate "none" or "tanh" passed on), LeakyRelu (its alpha as CANN's
// negative_slope; bfloat16 not on the Atlas training series, activation/leaky_relu/README.md); Sign and IsNaN
// (below).
#include <cstring>
#include <string>

#include "cann/sequence_kernel.h"
#include "cann/soc.h"
#include "placed/common/placed_op.h"

namespace ortops::placed::unary {
namespace {

// The ONNX ops (the CANN op computing each: ort_ops/cann_soc_table.json "placed").
constexpr const char* kFloat[] = {"Elu",        "Exp",  "Log",     "Neg",  "Abs",  "Sqrt",
                                  "Reciprocal", "Relu", "Sigmoid", "Tanh", "Gelu", "LeakyRelu"};
constexpr const char* kInteger[] = {"Neg", "Abs"};
constexpr const char* kLogical[] = {"Not"};

class UnaryKernel : public PlacedKernel {
 public:
  UnaryKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status), acl_op_(Launch(0)) {
    if (*status != nullptr) return;
    is_elu_ = std::strcmp(op.GetName(), "Elu") == 0;
    is_gelu_ = std::strcmp(op.GetName(), "Gelu") == 0;
    is_leaky_relu_ = std::strcmp(op.GetName(), "LeakyRelu") == 0;
    if (is_elu_) *status = ReadFloatAttribute(info, name(), "alpha", 1.0f, &alpha_);
    if (is_leaky_relu_) *status = LeakyReluInit(info, op.GetInputType(0));
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
      if (is_leaky_relu_) op.AttrFloat("negative_slope", alpha_);
      if (is_gelu_) op.AttrString("approximate", approximate_.c_str());
      if (std::strcmp(acl_op_, "Exp") == 0 || std::strcmp(acl_op_, "Log") == 0) {
        op.AttrFloat("base", -1.0f).AttrFloat("scale", 1.0f).AttrFloat("shift", 0.0f);  // natural exp/log
      }
      return op.Run(run.stream);
    });
  }

 private:
  OrtStatusPtr LeakyReluInit(const OrtKernelInfo* info, ONNXTensorElementDataType type) {
    ORTOPS_RETURN_IF_ERROR(ReadFloatAttribute(info, name(), "alpha", 0.01f, &alpha_));
    if (type == kBF16 && std::strcmp(cann::SocFamily(cann::SocName(*acl_)), "ascend910") == 0) {
      return Fail("CANN LeakyRelu on " + cann::SocName(*acl_) +
                  " (Atlas training series) takes float32 and float16 only (activation/leaky_relu/README.md)");
    }
    return nullptr;
  }

  const char* acl_op_;
  bool is_elu_ = false;
  bool is_gelu_ = false;
  bool is_leaky_relu_ = false;
  float alpha_ = 1.0f;
  std::string approximate_;
};

// Sign as ONNX Runtime's CPU EP computes it: CANN Sign gives (x > 0) - (x < 0), 0 for NaN, which is the CPU EP's
// float16 / bfloat16 Sign (it compares the float value) and its integer one; its float32 Sign keeps NaN, so a
// float32 x takes SelectV2(Equal(x, x), Sign(x), x) (route "default", 3 launches), the rest one Sign ("plain").
class SignKernel : public PlacedKernel {
 public:
  SignKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status, KeepsNan(op.GetInputType(0)) ? kDefaultRoute : "plain") {}

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "input", &x));
    return OnOutput(context, x.shape, [&](CannRun& begun, void* out) -> OrtStatusPtr {
      const aclDataType type = AclTypeOf(x.type);
      if (!KeepsNan(x.type)) {
        return AclOp(*begun.acl, "Sign")
            .Input(x.data, Bytes(x), type, x.shape)
            .Output(out, Bytes(x), type, x.shape)
            .Run(begun.stream);
      }
      cann::SequenceRun run;
      static_cast<CannRun&>(run) = begun;
      cann::ScratchLayout layout;
      const size_t sign_at = layout.Add(Bytes(x)), not_nan_at = layout.Add(x.count);
      ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, x.memory, layout.size()));
      void* sign = run.Scratch(sign_at);
      void* not_nan = run.Scratch(not_nan_at);
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "Sign")
                                 .Input(x.data, Bytes(x), type, x.shape)
                                 .Output(sign, Bytes(x), type, x.shape)
                                 .Run(run.stream));
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "Equal")
                                 .Input(x.data, Bytes(x), type, x.shape)
                                 .Input(x.data, Bytes(x), type, x.shape)
                                 .Output(not_nan, x.count, ACL_BOOL, x.shape)
                                 .Run(run.stream));
      return AclOp(*run.acl, "SelectV2")
          .Input(not_nan, x.count, ACL_BOOL, x.shape)
          .Input(sign, Bytes(x), type, x.shape)
          .Input(x.data, Bytes(x), type, x.shape)
          .Output(out, Bytes(x), type, x.shape)
          .Run(run.stream);
    });
  }

 private:
  static bool KeepsNan(ONNXTensorElementDataType t) { return t == kF32; }

  mutable cann::ScratchUser scratch_;
};

// IsNaN: CANN IsNan (hicann/ops-math math/is_nan: y = x != x, bool; on Ascend 950 and Atlas A2/A3 only, its
// README), else NotEqual(x, x) (math/not_equal, on the Atlas training / inference series too): one launch either
// way, both exact. The route is the first of the two the SoC has (RouteOnSoc, as the placement rule).
class IsNanKernel : public PlacedKernel {
 public:
  IsNanKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status, RouteOnSoc("IsNaN", {kDefaultRoute, "not_equal"})), acl_op_(Launch(0)) {}

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "X", &x));
    return OnOutput(context, x.shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      AclOp op(*run.acl, acl_op_);
      op.Input(x.data, Bytes(x), AclTypeOf(x.type), x.shape);
      if (std::strcmp(acl_op_, "NotEqual") == 0) op.Input(x.data, Bytes(x), AclTypeOf(x.type), x.shape);
      return op.Output(out, x.count, ACL_BOOL, x.shape).Run(run.stream);
    });
  }

 private:
  const char* acl_op_;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16}) {
    for (const char* m : kFloat) list.Add(m, {In(t)}, {In(t)}, Make<UnaryKernel>);
  }
  for (ONNXTensorElementDataType t : {kI32, kI64}) {
    for (const char* m : kInteger) list.Add(m, {In(t)}, {In(t)}, Make<UnaryKernel>);
  }
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kI32, kI64})
    list.Add("Sign", {In(t)}, {In(t)}, Make<SignKernel>);
  for (const char* m : kLogical) list.Add(m, {In(kBool)}, {In(kBool)}, Make<UnaryKernel>);
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16}) list.Add("IsNaN", {In(t)}, {In(kBool)}, Make<IsNanKernel>);
}

}  // namespace ortops::placed::unary
