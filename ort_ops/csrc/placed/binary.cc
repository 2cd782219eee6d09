// Broadcasting binary ops placed on CANN: Add, Sub, Mul, Div (CANN Add/Sub/Mul; Div: RealDiv for
// floats, TruncateDiv for integers, which truncates like ONNX's integer Div; they broadcast
// themselves: no BroadcastToD), comparisons (Equal, Less, LessOrEqual, Greater, GreaterOrEqual ->
// CANN's ops of the same meaning), And/Or (LogicalAnd/LogicalOr), and Where (SelectV2,
// broadcasting its three inputs), Pow (CANN Pow: hicann/ops-math math/pow/README.md, out_i =
// input_i ^ exponent_i, broadcasting; its prototype op_graph/pow_proto.h types x1 and x2 apart and
// y as their Promote). Pow's pairs: base and exponent of one float type (the AICore kernel); a
// float16/float32/double base to an int32/int64 power and int32/int64 to an int32/int64 power
// whose Promote is the base's type (CANN's AICPU kernel, op_kernel_aicpu/pow_aicpu.cpp: the double
// pow of the operands rounded to the base's type, as ORT's CPU EP computes; integers by repeated
// squaring, exact where ORT's double pow rounds beyond 2^53). No integer base to a float power:
// CANN's Promote makes that output float, which rounds before ONNX's conversion to the base's type.
//
// Arithmetic dtypes: those the CANN EP registers (onnxruntime cann/math/binary_elementwise_ops.cc,
// opset 14: uint8, int8, int16, int32, int64, float16, float, double; Sub/Mul/Div also uint16) and
// bfloat16, each one the CANN op's prototype lists (hicann/ops-math@c4193324
// math/add/op_graph/add_proto.h: no uint16; math/sub/op_graph/sub_proto.h,
// math/mul/op_graph/mul_proto.h, math/real_div/op_graph/real_div_proto.h,
// math/truncate_div/op_graph/truncate_div_proto.h). Integer division by zero: the device's value
// (TruncateDiv README: undefined), no fault; ONNX leaves it undefined too.
#include "placed/common/placed_op.h"

#include <cstring>
#include <utility>

namespace ortops::placed::binary {
namespace {

// The ONNX ops (the CANN op computing each: ort_ops/cann_soc_table.json "placed").
constexpr const char* kArithmetic[] = {"Add", "Sub", "Mul"};
constexpr const char* kCompare[] = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"};
constexpr const char* kLogical[] = {"And", "Or"};

constexpr ONNXTensorElementDataType kFloats[] = {kF32, kF16, kBF16, kF64};
constexpr ONNXTensorElementDataType kAddInts[] = {kU8, kI8, kI16, kI32, kI64};
constexpr ONNXTensorElementDataType kInts[] = {kU8, kU16, kI8, kI16, kI32, kI64};

bool IsFloat(ONNXTensorElementDataType t) {
  for (ONNXTensorElementDataType f : kFloats)
    if (f == t) return true;
  return false;
}

// The route of ONNX op `onnx` on inputs of type `type`: Div has one for floats and one for integers.
const char* RouteOf(const char* onnx, ONNXTensorElementDataType type) {
  if (std::strcmp(onnx, "Div") == 0) return IsFloat(type) ? "float" : "integer";
  return kDefaultRoute;
}

class BinaryKernel : public PlacedKernel {
 public:
  BinaryKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status, RouteOf(op.GetName(), op.inputs()[0].type)),
        acl_op_(Launch(0)),
        out_type_(op.outputs()[0].type) {}

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView a, b;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "A", &a));
    ORTOPS_RETURN_IF_ERROR(Input(context, 1, "B", &b));
    std::vector<int64_t> shape;
    if (!BroadcastShapes(a.shape, b.shape, &shape)) {
      return Fail("shapes " + ShapeText(a.shape) + " and " + ShapeText(b.shape) + " do not broadcast");
    }
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const size_t count = ElementCount(shape);
      return AclOp(*run.acl, acl_op_)
          .Input(a.data, Bytes(a), AclTypeOf(a.type), a.shape)
          .Input(b.data, Bytes(b), AclTypeOf(b.type), b.shape)
          .Output(out, count * ElementSize(out_type_), AclTypeOf(out_type_), shape)
          .Run(run.stream);
    });
  }

 private:
  const char* acl_op_;
  ONNXTensorElementDataType out_type_;
};

class WhereKernel : public PlacedKernel {
 public:
  WhereKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status) : PlacedKernel(info, op, status) {}

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
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const size_t count = ElementCount(shape);
      return AclOp(*run.acl, "SelectV2")
          .Input(c.data, Bytes(c), ACL_BOOL, c.shape)
          .Input(x.data, Bytes(x), AclTypeOf(x.type), x.shape)
          .Input(y.data, Bytes(y), AclTypeOf(y.type), y.shape)
          .Output(out, count * ElementSize(x.type), AclTypeOf(x.type), shape)
          .Run(run.stream);
    });
  }
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : kFloats) {
    for (const char* m : kArithmetic) list.Add(m, {In(t), In(t)}, {In(t)}, Make<BinaryKernel>);
    list.Add("Div", {In(t), In(t)}, {In(t)}, Make<BinaryKernel>);
    list.Add("Pow", {In(t), In(t)}, {In(t)}, Make<BinaryKernel>);
  }
  for (ONNXTensorElementDataType t : {kF32, kF16, kF64}) {
    for (ONNXTensorElementDataType e : {kI32, kI64}) list.Add("Pow", {In(t), In(e)}, {In(t)}, Make<BinaryKernel>);
  }
  for (auto [t, e] : {std::pair{kI32, kI32}, std::pair{kI64, kI64}, std::pair{kI64, kI32}}) {
    list.Add("Pow", {In(t), In(e)}, {In(t)}, Make<BinaryKernel>);
  }
  for (ONNXTensorElementDataType t : kAddInts) list.Add("Add", {In(t), In(t)}, {In(t)}, Make<BinaryKernel>);
  for (ONNXTensorElementDataType t : kInts) {
    for (const char* op : {"Sub", "Mul", "Div"}) list.Add(op, {In(t), In(t)}, {In(t)}, Make<BinaryKernel>);
  }
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kI32, kI64}) {
    for (const char* m : kCompare) list.Add(m, {In(t), In(t)}, {In(kBool)}, Make<BinaryKernel>);
  }
  list.Add("Equal", {In(kBool), In(kBool)}, {In(kBool)}, Make<BinaryKernel>);
  for (const char* m : kLogical) list.Add(m, {In(kBool), In(kBool)}, {In(kBool)}, Make<BinaryKernel>);
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kI32, kI64, kBool}) {
    list.Add("Where", {In(kBool), In(t), In(t)}, {In(t)}, Make<WhereKernel>);
  }
}

}  // namespace ortops::placed::binary
