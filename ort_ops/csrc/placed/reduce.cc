// ReduceSum (opset 13+ form: axes as an optional host input) and ReduceMean, ReduceMax, ReduceMin
// (axes as an attribute before opset 18, as an optional host input from 18) placed on CANN: the
// CANN op of the same name with the axes as a constant input. Empty axes with noop_with_empty_axes
// = 1: a device copy; a reduction over an empty axis (x has no elements, the output has some):
// zeros for ReduceSum (the empty sum); the others refuse it (CANN's ops are not specified there;
// ONNX gives NaN for the mean, -inf / +inf or the type's limits for max / min).
#include "placed/common/placed_op.h"

namespace ortops::placed::reduce {
namespace {

// The ONNX op of the kernel's name on the CANN op of the same name: axes from input 1 when
// present, else from the `axes` attribute (ReduceMean before opset 18), else none.
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
      const bool sum = std::string(name()) == "ReduceSum";
      if (x.count == 0) {
        // The sum over an empty set is 0 (ONNX ReduceSum; the CPU EP gives +0.0): zero bytes, no CANN op.
        if (sum) return run.ZeroOnDevice(out, count * ElementSize(x.type));
        const std::string verb = std::string(name()) == "ReduceMean" ? "average" : "reduce";
        return Fail("data of shape " + ShapeText(x.shape) + " has no element to " + verb +
                    " over axes of output shape " + ShapeText(shape) + " (expected a non-empty reduction)");
      }
      const aclDataType type = AclTypeOf(x.type);
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
  int64_t keepdims_ = 1, noop_ = 0;
  std::vector<int64_t> attribute_axes_;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kI32, kI64}) {
    list.Add("ReduceSum", {In(t), HostInts(/*optional=*/true)}, {In(t)}, Make<ReduceKernel>);
  }
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16}) {
    list.Add("ReduceMean", {In(t), HostInts(/*optional=*/true)}, {In(t)}, Make<ReduceKernel>);
  }
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kF64, kI32, kI64}) {
    for (const char* op : {"ReduceMax", "ReduceMin"}) {
      list.Add(op, {In(t), HostInts(/*optional=*/true)}, {In(t)}, Make<ReduceKernel>);
    }
  }
}

}  // namespace ortops::placed::reduce
