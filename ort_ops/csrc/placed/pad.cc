// Pad (opset 11+) placed on CANN: CANN PadV3 (hicann/ops-math conversion/pad_v3, "Compatible with
// ONNX operator Pad": modes constant, edge, reflect; a negative pad removes elements) with ONNX's
// pads, read on the host (and axes, opset 18+), as its constant paddings in [[begin_i, end_i], ...]
// order, and constant_value (device memory, one element) as its constant_values input. Checked on
// the host, failing the run by name: pads of 2 * (axes or rank) entries, no output dim below 0,
// reflect pads in [0, dim) (PadV3's range, without the negative pads ONNX leaves undefined for
// reflect); an empty axis cannot be reflected or edge-padded.
// mode "wrap" (opset 19) is PadV3's "circular", Ascend 950's build only: refused. Pads all 0 is a
// device copy; an empty output launches nothing.
#include <string>

#include "placed/common/placed_op.h"

namespace ortops::placed::pad {
namespace {

class PadKernel : public PlacedKernel {
 public:
  PadKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status) : PlacedKernel(info, op, status) {
    if (*status != nullptr) return;
    if ((*status = ReadStringAttribute(info, name(), "mode", "constant", &mode_)) != nullptr) return;
    if (mode_ != "constant" && mode_ != "edge" && mode_ != "reflect") {
      *status = Fail("mode \"" + mode_ +
                     "\" is not placed (CANN PadV3 has constant, edge and reflect on Atlas A2/A3; "
                     "its circular mode, ONNX's wrap, is Ascend 950 only)");
    }
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, pads_view, value, axes_view;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "data", &x));
    ORTOPS_RETURN_IF_ERROR(Input(context, 1, "pads", &pads_view));
    ORTOPS_RETURN_IF_ERROR(GetInput(context, 2, &value));
    ORTOPS_RETURN_IF_ERROR(GetInput(context, 3, &axes_view));
    const auto rank = static_cast<int64_t>(x.shape.size());
    std::vector<int64_t> pads, axes;
    ORTOPS_RETURN_IF_ERROR(Ints(pads_view, "pads", &pads));
    if (axes_view.present) {
      ORTOPS_RETURN_IF_ERROR(Ints(axes_view, "axes", &axes));
    } else {
      for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
    }
    if (pads.size() != 2 * axes.size()) {
      return Fail("pads " + ShapeText(pads) + " must have 2 entries per axis (" + std::to_string(axes.size()) + ")");
    }
    if (value.present && value.count != 1) {
      return Fail("constant_value of shape " + ShapeText(value.shape) + " must have one element");
    }
    std::vector<int64_t> begin(static_cast<size_t>(rank), 0), end(static_cast<size_t>(rank), 0);
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = 0;
      if (!NormalizeAxis(axes[i], x.shape.size(), &a) || seen[static_cast<size_t>(a)]) {
        return Fail("axes " + ShapeText(axes) + " must be distinct axes of data of shape " + ShapeText(x.shape));
      }
      seen[static_cast<size_t>(a)] = true;
      begin[static_cast<size_t>(a)] = pads[i];
      end[static_cast<size_t>(a)] = pads[axes.size() + i];
    }
    std::vector<int64_t> shape, paddings;
    bool copy = true;
    for (size_t d = 0; d < x.shape.size(); ++d) {
      const int64_t dim = x.shape[d], b = begin[d], e = end[d];
      if (dim + b + e < 0) {
        return Fail("pads " + ShapeText(pads) + " remove more than data's " + std::to_string(dim) +
                    " elements on axis " + std::to_string(d));
      }
      if (mode_ != "constant" && dim == 0 && dim + b + e > 0) {
        return Fail("mode " + mode_ + " cannot pad the empty axis " + std::to_string(d) + " of data " +
                    ShapeText(x.shape));
      }
      if (mode_ == "reflect" && (b < 0 || e < 0)) {
        return Fail("reflect with negative pads " + ShapeText(pads) +
                    ": undefined (ONNX's reference refuses them; ORT's CPU EP returns uninitialised memory)");
      }
      if (mode_ == "reflect" && (b >= dim || e >= dim)) {
        return Fail("reflect pads (" + std::to_string(b) + ", " + std::to_string(e) + ") on axis " + std::to_string(d) +
                    " of " + std::to_string(dim) + " elements: CANN PadV3 reflects at most dim - 1");
      }
      shape.push_back(dim + b + e);
      paddings.push_back(b);
      paddings.push_back(e);
      copy = copy && b == 0 && e == 0;
    }
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      if (copy) return run.CopyOnDevice(out, x.data, Bytes(x));
      const aclDataType type = AclTypeOf(x.type);
      AclOp op(*run.acl, "PadV3");
      op.Input(x.data, Bytes(x), type, x.shape)
          .ConstInput(paddings.data(), paddings.size() * sizeof(int64_t), ACL_INT64,
                      {static_cast<int64_t>(paddings.size())});
      if (value.present && mode_ == "constant") {
        op.Input(value.data, Bytes(value), type, value.shape);
      } else {
        op.AbsentInput();
      }
      return op.Output(out, ElementCount(shape) * ElementSize(x.type), type, shape)
          .AttrString("mode", mode_.c_str())
          .AttrBool("paddings_contiguous", true)
          .Run(run.stream);
    });
  }

 private:
  std::string mode_;
};

}  // namespace

// ONNX Pad's types that CANN PadV3's prototype lists (hicann/ops-math conversion/pad_v3/op_graph/pad_v3_proto.h).
void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kF64, kI8, kU8, kI16, kU16, kI32, kI64, kBool}) {
    list.Add("Pad", {In(t), HostInts(), Optional(t), HostInts(/*optional=*/true)}, {In(t)}, Make<PadKernel>);
  }
}

}  // namespace ortops::placed::pad
