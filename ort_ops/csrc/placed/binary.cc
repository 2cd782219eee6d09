// Broadcasting binary ops placed on CANN: Add, Sub, Mul, Div (CANN Add/Sub/Mul/RealDiv, which
// broadcast themselves: no BroadcastToD), comparisons (Equal, Less, LessOrEqual, Greater,
// GreaterOrEqual -> CANN's ops of the same meaning), And/Or (LogicalAnd/LogicalOr), and Where
// (SelectV2, broadcasting its three inputs).
#include "placed/common/placed_op.h"

#include <cstring>

namespace ortops::placed::binary {
namespace {

// ONNX op -> the CANN op computing it.
struct Mapping {
  const char* onnx;
  const char* acl;
};
constexpr Mapping kArithmetic[] = {{"Add", "Add"}, {"Sub", "Sub"}, {"Mul", "Mul"}};
constexpr Mapping kCompare[] = {{"Equal", "Equal"},
                                {"Less", "Less"},
                                {"LessOrEqual", "LessEqual"},
                                {"Greater", "Greater"},
                                {"GreaterOrEqual", "GreaterEqual"}};
// Div: floats only (CANN RealDiv; ONNX's integer Div truncates, CANN's integer Div is not
// documented to).
constexpr Mapping kOther[] = {{"Div", "RealDiv"}, {"And", "LogicalAnd"}, {"Or", "LogicalOr"}};

const char* AclOpOf(const char* onnx) {
  for (const Mapping& m : kArithmetic)
    if (std::strcmp(m.onnx, onnx) == 0) return m.acl;
  for (const Mapping& m : kCompare)
    if (std::strcmp(m.onnx, onnx) == 0) return m.acl;
  for (const Mapping& m : kOther)
    if (std::strcmp(m.onnx, onnx) == 0) return m.acl;
  return "";
}

class BinaryKernel : public PlacedKernel {
 public:
  BinaryKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status, {AclOpOf(op.GetName())}),
        acl_op_(AclOpOf(op.GetName())),
        out_type_(op.outputs()[0].type) {}

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView a, b;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "A", &a));
    ORTOPS_RETURN_IF_ERROR(Input(context, 1, "B", &b));
    std::vector<int64_t> shape;
    if (!BroadcastShapes(a.shape, b.shape, &shape)) {
      return Fail("shapes " + ShapeText(a.shape) + " and " + ShapeText(b.shape) + " do not broadcast");
    }
    void* out = nullptr;
    ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, 0, shape, &out));
    const size_t count = ElementCount(shape);
    if (count == 0) return nullptr;
    CannRun run;
    ORTOPS_RETURN_IF_ERROR(CannRun::Begin(context, name(), &run));
    return AclOp(*run.acl, acl_op_)
        .Input(a.data, Bytes(a), AclTypeOf(a.type), a.shape)
        .Input(b.data, Bytes(b), AclTypeOf(b.type), b.shape)
        .Output(out, count * ElementSize(out_type_), AclTypeOf(out_type_), shape)
        .Run(run.stream);
  }

 private:
  const char* acl_op_;
  ONNXTensorElementDataType out_type_;
};

class WhereKernel : public PlacedKernel {
 public:
  WhereKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status, {"SelectV2"}) {}

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView c, x, y;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "condition", &c));
    ORTOPS_RETURN_IF_ERROR(Input(context, 1, "X", &x));
    ORTOPS_RETURN_IF_ERROR(Input(context, 2, "Y", &y));
    std::vector<int64_t> xy, shape;
    if (!BroadcastShapes(x.shape, y.shape, &xy) || !BroadcastShapes(c.shape, xy, &shape)) {
      return Fail("shapes " + ShapeText(c.shape) + ", " + ShapeText(x.shape) + " and " + ShapeText(y.shape) +
                  " do not broadcast");
    }
    void* out = nullptr;
    ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, 0, shape, &out));
    const size_t count = ElementCount(shape);
    if (count == 0) return nullptr;
    CannRun run;
    ORTOPS_RETURN_IF_ERROR(CannRun::Begin(context, name(), &run));
    return AclOp(*run.acl, "SelectV2")
        .Input(c.data, Bytes(c), ACL_BOOL, c.shape)
        .Input(x.data, Bytes(x), AclTypeOf(x.type), x.shape)
        .Input(y.data, Bytes(y), AclTypeOf(y.type), y.shape)
        .Output(out, count * ElementSize(x.type), AclTypeOf(x.type), shape)
        .Run(run.stream);
  }
};

OpList Build() {
  OpList list;
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kI32, kI64}) {
    for (const Mapping& m : kArithmetic) list.Add(m.onnx, {In(t), In(t)}, {In(t)}, Make<BinaryKernel>);
    for (const Mapping& m : kCompare) list.Add(m.onnx, {In(t), In(t)}, {In(kBool)}, Make<BinaryKernel>);
  }
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16}) list.Add("Div", {In(t), In(t)}, {In(t)}, Make<BinaryKernel>);
  list.Add("Equal", {In(kBool), In(kBool)}, {In(kBool)}, Make<BinaryKernel>)
      .Add("And", {In(kBool), In(kBool)}, {In(kBool)}, Make<BinaryKernel>)
      .Add("Or", {In(kBool), In(kBool)}, {In(kBool)}, Make<BinaryKernel>);
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kI32, kI64, kBool}) {
    list.Add("Where", {In(kBool), In(t), In(t)}, {In(t)}, Make<WhereKernel>);
  }
  return list;
}

}  // namespace

const std::vector<OrtCustomOp*>& Ops() {
  static const OpList list = Build();
  return list.ops();
}

}  // namespace ortops::placed::binary
