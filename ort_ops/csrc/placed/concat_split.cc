// Concat and Split placed on CANN: ConcatV2 of the non-empty inputs (concat_dim a constant scalar)
// and SplitV into the non-empty pieces (size_splits and split_dim constants). CANN's constraints
// (hicann/ops-math conversion/concat_v2, conversion/split_v: at least two inputs to join, every
// piece at least 1 long) are met by leaving empty tensors out: one non-empty tensor is a device
// copy, none launches nothing. Atlas training / inference series (ascend910, ascend310p) have
// neither for bfloat16 (the READMEs): refused when the session is created there.
#include <string>

#include "placed/common/placed_op.h"

namespace ortops::placed::concat_split {
namespace {

constexpr int64_t kUnset = INT64_MIN;

OrtStatusPtr CountOf(OrtKernelContext* context, bool inputs, size_t* n) {
  return inputs ? Api().KernelContext_GetInputCount(context, n) : Api().KernelContext_GetOutputCount(context, n);
}

// A placed kernel of the two ops: the bfloat16 check of the SoC at creation.
class JoinSplitKernel : public PlacedKernel {
 public:
  JoinSplitKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status, ONNXTensorElementDataType type)
      : PlacedKernel(info, op, status) {
    if (*status != nullptr || type != kBF16) return;
    const std::string family = cann::SocFamily(cann::SocName(*acl_));
    if (family == "ascend910" || family == "ascend310p") {
      *status = Fail("CANN " + std::string(Launch(0)) + " on " + cann::SocName(*acl_) +
                     " (Atlas training/inference series) has no bfloat16 (its README)");
    }
  }
};

class ConcatKernel : public JoinSplitKernel {
 public:
  ConcatKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : JoinSplitKernel(info, op, status, op.inputs()[0].type) {
    if (*status == nullptr) *status = ReadIntAttribute(info, name(), "axis", kUnset, &axis_);
    if (*status == nullptr && axis_ == kUnset) *status = Fail("the required attribute axis is missing");
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    size_t n = 0;
    ORTOPS_RETURN_IF_ERROR(CountOf(context, true, &n));
    std::vector<TensorView> xs(n);
    for (size_t i = 0; i < n; ++i) {
      ORTOPS_RETURN_IF_ERROR(Input(context, i, ("inputs[" + std::to_string(i) + "]").c_str(), &xs[i]));
    }
    const size_t rank = xs[0].shape.size();
    int64_t axis = 0;
    ORTOPS_RETURN_IF_ERROR(AxisOf(axis_, xs[0], "inputs", &axis));
    const auto a = static_cast<size_t>(axis);
    std::vector<int64_t> shape = xs[0].shape;
    shape[a] = 0;
    std::vector<const TensorView*> parts;  // the non-empty inputs
    for (const TensorView& x : xs) {
      bool fits = x.shape.size() == rank;
      for (size_t d = 0; fits && d < rank; ++d) fits = d == a || x.shape[d] == xs[0].shape[d];
      if (!fits) {
        return Fail("inputs of shapes " + ShapeText(xs[0].shape) + " and " + ShapeText(x.shape) +
                    " differ outside axis " + std::to_string(axis));
      }
      shape[a] += x.shape[a];
      if (x.count > 0) parts.push_back(&x);
    }
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      if (parts.size() == 1) return run.CopyOnDevice(out, parts[0]->data, Bytes(*parts[0]));
      const aclDataType type = AclTypeOf(xs[0].type);
      AclOp op(*run.acl, Launch(0));
      for (const TensorView* x : parts) op.Input(x->data, Bytes(*x), type, x->shape);
      return op.ConstInput(&axis, sizeof(axis), ACL_INT64, {})
          .Output(out, ElementCount(shape) * ElementSize(xs[0].type), type, shape)
          .AttrInt("N", static_cast<int64_t>(parts.size()))
          .Run(run.stream);
    });
  }

 private:
  int64_t axis_ = kUnset;
};

class SplitKernel : public JoinSplitKernel {
 public:
  SplitKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : JoinSplitKernel(info, op, status, op.inputs()[0].type) {
    if (*status != nullptr) return;
    if ((*status = ReadIntAttribute(info, name(), "axis", 0, &axis_)) != nullptr) return;
    if ((*status = ReadIntAttribute(info, name(), "num_outputs", kUnset, &num_outputs_)) != nullptr) return;
    *status = ReadIntsAttribute(info, name(), "split", {}, &attribute_split_);  // before opset 13
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, split_view;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "input", &x));
    ORTOPS_RETURN_IF_ERROR(GetInput(context, 1, &split_view));
    size_t n = 0;
    ORTOPS_RETURN_IF_ERROR(CountOf(context, false, &n));
    int64_t axis = 0;
    ORTOPS_RETURN_IF_ERROR(AxisOf(axis_, x, "input", &axis));
    const auto a = static_cast<size_t>(axis);
    const int64_t dim = x.shape[a];
    std::vector<int64_t> sizes = attribute_split_;
    if (split_view.present) ORTOPS_RETURN_IF_ERROR(Ints(split_view, "split", &sizes));
    const auto outputs = static_cast<int64_t>(n);
    if (!split_view.present && attribute_split_.empty()) {
      if (num_outputs_ != kUnset && num_outputs_ != outputs) {
        return Fail("num_outputs " + std::to_string(num_outputs_) + " differs from the node's " +
                    std::to_string(outputs) + " outputs");
      }
      // ONNX: equal pieces; with num_outputs (opset 18) the last may be smaller (ceil-sized pieces).
      const int64_t piece = num_outputs_ != kUnset ? (dim + outputs - 1) / outputs : dim / outputs;
      if (num_outputs_ == kUnset && dim % outputs != 0) {
        return Fail("input dim " + std::to_string(dim) + " of axis " + std::to_string(axis) + " does not split into " +
                    std::to_string(outputs) + " equal pieces");
      }
      int64_t left = dim;
      for (int64_t k = 0; k < outputs; ++k) {
        sizes.push_back(std::min(piece, left));
        left -= sizes.back();
      }
    }
    int64_t total = 0;
    bool negative = false;
    for (int64_t s : sizes) {
      negative = negative || s < 0;
      total += s;
    }
    if (negative || static_cast<int64_t>(sizes.size()) != outputs || total != dim) {
      return Fail("split " + ShapeText(sizes) + " must give " + std::to_string(outputs) +
                  " non-negative sizes summing to dim " + std::to_string(dim) + " of input of shape " +
                  ShapeText(x.shape));
    }
    std::vector<void*> outs(n, nullptr);
    std::vector<int64_t> parts, part_sizes;  // the non-empty pieces: output index, size
    for (size_t k = 0; k < n; ++k) {
      std::vector<int64_t> shape = x.shape;
      shape[a] = sizes[k];
      ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, k, shape, &outs[k]));
      if (outs[k] != nullptr) {
        parts.push_back(static_cast<int64_t>(k));
        part_sizes.push_back(sizes[k]);
      }
    }
    if (parts.empty()) return nullptr;
    CannRun run;
    ORTOPS_RETURN_IF_ERROR(CannRun::Begin(context, name(), &run));
    if (parts.size() == 1) return run.CopyOnDevice(outs[static_cast<size_t>(parts[0])], x.data, Bytes(x));
    const aclDataType type = AclTypeOf(x.type);
    AclOp op(*run.acl, Launch(0));
    op.Input(x.data, Bytes(x), type, x.shape)
        .ConstInput(part_sizes.data(), part_sizes.size() * sizeof(int64_t), ACL_INT64,
                    {static_cast<int64_t>(part_sizes.size())})
        .ConstInput(&axis, sizeof(axis), ACL_INT64, {});
    const size_t row_bytes = x.shape[a] == 0 ? 0 : Bytes(x) / static_cast<size_t>(x.shape[a]);
    for (size_t i = 0; i < parts.size(); ++i) {
      std::vector<int64_t> shape = x.shape;
      shape[a] = part_sizes[i];
      op.Output(outs[static_cast<size_t>(parts[i])], row_bytes * static_cast<size_t>(part_sizes[i]), type, shape);
    }
    return op.AttrInt("num_split", static_cast<int64_t>(parts.size())).Run(run.stream);
  }

 private:
  int64_t axis_ = 0, num_outputs_ = kUnset;
  std::vector<int64_t> attribute_split_;
};

}  // namespace

// The dtypes of both CANN prototypes that the simulator has (BasicType and bool).
void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kF64, kI8, kI16, kI32, kI64, kU8, kBool}) {
    list.Add("Concat", {Variadic(t)}, {In(t)}, Make<ConcatKernel>);
    list.Add("Split", {In(t), HostInts(/*optional=*/true)}, {Variadic(t)}, Make<SplitKernel>);
  }
}

}  // namespace ortops::placed::concat_split
