// ReduceSum (opset 13+ form: axes as an optional host input) and ReduceMean, ReduceMax, ReduceMin
// (axes as an attribute before opset 18, as an optional host input from 18) placed on CANN: the
// CANN op of the same name with the axes as a constant input. Empty axes with noop_with_empty_axes
// = 1: a device copy; a reduction over an empty axis (x has no elements, the output has some):
// zeros for ReduceSum (the empty sum); for ReduceMax / ReduceMin what ONNX defines (opset 18+:
// -inf / +inf, or the type's lowest / largest value where it has no infinity; bool false / true),
// CANN Fill (bool: aclrtMemsetAsync; FillOnDevice); ReduceMean refuses it (ONNX leaves the mean of nothing
// undefined, the CPU EP gives 0). Bool ReduceMax / ReduceMin: CANN ReduceAny / ReduceAll (the
// logical or / and, bool in and out: hicann/ops-math@c4193324 math/reduce_any/op_graph/
// reduce_any_proto.h, math/reduce_all/op_graph/reduce_all_proto.h).
// ReduceProd: CANN ReduceProd (math/reduce_prod, TensorFlow's; over an empty axis 1, Fill).
// ReduceSumSquare and ReduceL2: CANN Mul of the data by itself into the run's scratch, ReduceSum of
// that (route "default"), and for ReduceL2 Sqrt of the sum; over an empty axis 0.
#include <cstring>
#include <limits>
#include <string>

#include "cann/sequence_kernel.h"
#include "placed/common/placed_op.h"

namespace ortops::placed::reduce {
namespace {

// 1 as `type`'s bytes: the product over no element.
std::vector<unsigned char> One(ONNXTensorElementDataType type) {
  auto bytes = [](auto v) {
    std::vector<unsigned char> out(sizeof(v));
    std::memcpy(out.data(), &v, sizeof(v));
    return out;
  };
  switch (type) {
    case kF32: return bytes(1.0f);
    case kF16: return bytes(static_cast<uint16_t>(0x3C00));
    case kBF16: return bytes(static_cast<uint16_t>(0x3F80));
    case kI32: return bytes(int32_t{1});
    default: return bytes(int64_t{1});
  }
}

// The extreme ONNX gives a max (`lowest`) / min over no element, as `type`'s bytes.
std::vector<unsigned char> EmptyExtreme(ONNXTensorElementDataType type, bool lowest) {
  auto bytes = [](auto v) {
    std::vector<unsigned char> out(sizeof(v));
    std::memcpy(out.data(), &v, sizeof(v));
    return out;
  };
  switch (type) {
    case kF32: return bytes(lowest ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity());
    case kF64:
      return bytes(lowest ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
    case kF16: return bytes(static_cast<uint16_t>(lowest ? 0xFC00 : 0x7C00));
    case kBF16: return bytes(static_cast<uint16_t>(lowest ? 0xFF80 : 0x7F80));
    case kI32: return bytes(lowest ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max());
    case kI64: return bytes(lowest ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max());
    default: return {static_cast<unsigned char>(lowest ? 0 : 1)};  // bool: false / true
  }
}

// The ONNX op of the kernel's name on the CANN op of the same name (bool ReduceMax / ReduceMin:
// ReduceAny / ReduceAll): axes from input 1 when present, else from the `axes` attribute (before
// opset 18), else none.
class ReduceKernel : public PlacedKernel {
 public:
  ReduceKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status) : PlacedKernel(info, op, status) {
    if (*status != nullptr) return;
    if ((*status = ReadIntAttribute(info, name(), "keepdims", 1, &keepdims_)) != nullptr) return;
    if ((*status = ReadIntsAttribute(info, name(), "axes", {}, &attribute_axes_)) != nullptr) return;
    *status = ReadIntAttribute(info, name(), "noop_with_empty_axes", 0, &noop_);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, axes_view;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "data", &x));
    ORTOPS_RETURN_IF_ERROR(GetInput(context, 1, &axes_view));
    std::vector<int64_t> axes = attribute_axes_;
    if (axes_view.present) ORTOPS_RETURN_IF_ERROR(Ints(axes_view, "axes", &axes));
    const size_t rank = x.shape.size();
    std::vector<bool> reduce(rank, false);
    if (axes.empty() && noop_ == 0) reduce.assign(rank, true);
    for (int64_t a : axes) {
      int64_t axis = 0;
      if (!NormalizeAxis(a, rank, &axis)) {
        return Fail("axis " + std::to_string(a) + " is out of range for data of shape " + ShapeText(x.shape));
      }
      reduce[static_cast<size_t>(axis)] = true;
    }
    std::vector<int64_t> shape, normalized;
    for (size_t i = 0; i < rank; ++i) {
      if (reduce[i]) {
        normalized.push_back(static_cast<int64_t>(i));
        if (keepdims_) shape.push_back(1);
      } else {
        shape.push_back(x.shape[i]);
      }
    }
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const size_t count = ElementCount(shape);
      if (normalized.empty()) return run.CopyOnDevice(out, x.data, Bytes(x));
      const std::string op = name();
      const aclDataType type = AclTypeOf(x.type);
      if (x.count == 0) {
        // The sum over an empty set is 0 (ONNX ReduceSum; the CPU EP gives +0.0): zero bytes, no CANN op.
        if (op == "ReduceSum" || op == "ReduceSumSquare" || op == "ReduceL2") {
          return run.ZeroOnDevice(out, count * ElementSize(x.type));
        }
        if (op == "ReduceProd") {  // the empty product
          ORTOPS_RETURN_IF_ERROR(RequireRoute(*run.acl, "empty"));
          return FillOnDevice(run, One(x.type), x.type, shape, out);
        }
        if (op == "ReduceMean") {
          return Fail("data of shape " + ShapeText(x.shape) + " has no element to average over axes of output shape " +
                      ShapeText(shape) + " (the mean of nothing is undefined)");
        }
        const std::vector<unsigned char> value = EmptyExtreme(x.type, op == "ReduceMax");
        if (!SameBytes(value)) ORTOPS_RETURN_IF_ERROR(RequireRoute(*run.acl, "empty"));
        return FillOnDevice(run, value, x.type, shape, out);
      }
      if (x.type == kBool) {
        ORTOPS_RETURN_IF_ERROR(RequireRoute(*run.acl, "bool"));
        return AclOp(*run.acl, op == "ReduceMax" ? "ReduceAny" : "ReduceAll")
            .Input(x.data, Bytes(x), type, x.shape)
            .ConstInput(normalized.data(), normalized.size() * sizeof(int64_t), ACL_INT64,
                        {static_cast<int64_t>(normalized.size())})
            .Output(out, count, type, shape)
            .AttrBool("keep_dims", keepdims_ != 0)
            .Run(run.stream);
      }
      if (op == "ReduceSumSquare" || op == "ReduceL2") {
        return SumOfSquares(context, run, x, normalized, shape, op == "ReduceL2", out);
      }
      return AclOp(*run.acl, name())
          .Input(x.data, Bytes(x), type, x.shape)
          .ConstInput(normalized.data(), normalized.size() * sizeof(int64_t), ACL_INT64,
                      {static_cast<int64_t>(normalized.size())})
          .Output(out, count * ElementSize(x.type), type, shape)
          .AttrBool("keep_dims", keepdims_ != 0)
          .AttrBool("noop_with_empty_axes", false)
          .Run(run.stream);
    });
  }

 private:
  // ReduceSum(x * x) over `axes` into `out` (ReduceL2: its Sqrt), the squares in the run's scratch.
  OrtStatusPtr SumOfSquares(OrtKernelContext* context, const CannRun& begun, const TensorView& x,
                            const std::vector<int64_t>& axes, const std::vector<int64_t>& shape, bool root,
                            void* out) const {
    cann::SequenceRun run;
    static_cast<CannRun&>(run) = begun;
    cann::ScratchLayout layout;
    const size_t out_bytes = ElementCount(shape) * ElementSize(x.type);
    const size_t squares_at = layout.Add(Bytes(x));
    const size_t sum_at = layout.Add(root ? out_bytes : 0);
    ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, x.memory, layout.size()));
    const aclDataType type = AclTypeOf(x.type);
    void* squares = run.Scratch(squares_at);
    ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "Mul")
                               .Input(x.data, Bytes(x), type, x.shape)
                               .Input(x.data, Bytes(x), type, x.shape)
                               .Output(squares, Bytes(x), type, x.shape)
                               .Run(run.stream));
    void* sum = root ? run.Scratch(sum_at) : out;
    ORTOPS_RETURN_IF_ERROR(
        AclOp(*run.acl, "ReduceSum")
            .Input(squares, Bytes(x), type, x.shape)
            .ConstInput(axes.data(), axes.size() * sizeof(int64_t), ACL_INT64, {static_cast<int64_t>(axes.size())})
            .Output(sum, out_bytes, type, shape)
            .AttrBool("keep_dims", keepdims_ != 0)
            .AttrBool("noop_with_empty_axes", false)
            .Run(run.stream));
    if (!root) return nullptr;
    return AclOp(*run.acl, "Sqrt")
        .Input(sum, out_bytes, type, shape)
        .Output(out, out_bytes, type, shape)
        .Run(run.stream);
  }

  int64_t keepdims_ = 1, noop_ = 0;
  std::vector<int64_t> attribute_axes_;
  mutable cann::ScratchUser scratch_;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kI32, kI64}) {
    list.Add("ReduceSum", {In(t), HostInts(/*optional=*/true)}, {In(t)}, Make<ReduceKernel>);
  }
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16}) {
    for (const char* op : {"ReduceMean", "ReduceSumSquare", "ReduceL2"}) {
      list.Add(op, {In(t), HostInts(/*optional=*/true)}, {In(t)}, Make<ReduceKernel>);
    }
  }
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kI32, kI64}) {
    list.Add("ReduceProd", {In(t), HostInts(/*optional=*/true)}, {In(t)}, Make<ReduceKernel>);
  }
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kF64, kI32, kI64, kBool}) {
    for (const char* op : {"ReduceMax", "ReduceMin"}) {
      list.Add(op, {In(t), HostInts(/*optional=*/true)}, {In(t)}, Make<ReduceKernel>);
    }
  }
}

}  // namespace ortops::placed::reduce
