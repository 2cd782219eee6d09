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
// (TruncateDiv README: undefined), no fault; ONNX leaves it undefined too. Min / Max: below.
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cann/sequence_kernel.h"
#include "placed/common/placed_op.h"

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
  using PlacedKernel::PlacedKernel;

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

// Min / Max (variadic, broadcasting): CANN Minimum / Maximum folded over the inputs in order, each launch
// reading the later input first: on equal operands CANN's kernels give their first (Min(-0.0, +0.0)), ONNX
// Runtime the later input; a NaN propagates in both. One input: a device copy; n inputs: n - 1 launches,
// the partial results in the run's scratch.
class MinMaxKernel : public PlacedKernel {
 public:
  MinMaxKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status), acl_op_(Launch(0)) {}

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    size_t n = 0;
    ORTOPS_RETURN_IF_ERROR(Api().KernelContext_GetInputCount(context, &n));
    std::vector<TensorView> in(n);
    std::vector<std::vector<int64_t>> shapes(n);  // shapes[i]: the broadcast of inputs 0..i
    for (size_t i = 0; i < n; ++i) {
      const std::string what = "data_" + std::to_string(i);
      ORTOPS_RETURN_IF_ERROR(Input(context, i, what.c_str(), &in[i]));
      if (i == 0) {
        shapes[0] = in[0].shape;
      } else if (!BroadcastShapes(shapes[i - 1], in[i].shape, &shapes[i])) {
        return Fail("input shapes " + ShapeText(shapes[i - 1]) + " (inputs 0.." + std::to_string(i - 1) + ") and " +
                    ShapeText(in[i].shape) + " (input " + std::to_string(i) + ") do not broadcast");
      }
    }
    if (n == 0) return Fail("has no input");
    const std::vector<int64_t>& shape = shapes[n - 1];
    return OnOutput(context, shape, [&](CannRun& begun, void* out) -> OrtStatusPtr {
      const aclDataType type = AclTypeOf(in[0].type);
      const size_t size = ElementSize(in[0].type);
      if (n == 1) return begun.CopyOnDevice(out, in[0].data, Bytes(in[0]));
      cann::SequenceRun run;
      static_cast<CannRun&>(run) = begun;
      cann::ScratchLayout layout;
      const size_t partial_at = layout.Add(n > 2 ? ElementCount(shape) * size : 0);
      const size_t other_at = layout.Add(n > 3 ? ElementCount(shape) * size : 0);
      if (n > 2) ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, in[0].memory, layout.size()));
      const void* acc = in[0].data;
      for (size_t i = 1; i < n; ++i) {
        void* dst = i + 1 == n ? out : run.Scratch(i % 2 == 1 ? partial_at : other_at);
        const size_t acc_bytes = ElementCount(shapes[i - 1]) * size;
        ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, acl_op_)
                                   .Input(in[i].data, Bytes(in[i]), type, in[i].shape)
                                   .Input(acc, acc_bytes, type, shapes[i - 1])
                                   .Output(dst, ElementCount(shapes[i]) * size, type, shapes[i])
                                   .Run(run.stream));
        acc = dst;
      }
      return nullptr;
    });
  }

 private:
  const char* acl_op_;
  mutable cann::ScratchUser scratch_;
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
  // (the types of CANN Maximum / Minimum's prototypes, math/maximum/op_graph/maximum_proto.h, that ONNX's Min/Max have)
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kF64, kI8, kI32, kI64, kU8, kU32, kU64}) {
    for (const char* m : {"Min", "Max"}) list.Add(m, {Variadic(t)}, {In(t)}, Make<MinMaxKernel>);
  }
}

}  // namespace ortops::placed::binary
