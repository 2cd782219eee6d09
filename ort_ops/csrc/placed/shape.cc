// Shape-only ops placed on CANN: Reshape, Squeeze, Unsqueeze, Flatten, Identity. The output is the
// input's bytes with another shape: one device-to-device copy on the stream (custom ops cannot
// alias their input), no CANN op. Shapes and axes are host inputs (ORT keeps them in CPU memory).
#include <algorithm>

#include "placed/common/placed_op.h"

namespace ortops::placed::shape {
namespace {

enum class Kind { kReshape, kSqueeze, kUnsqueeze, kFlatten, kIdentity };

class ShapeKernel : public PlacedKernel {
 public:
  ShapeKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status, Kind kind)
      : PlacedKernel(info, op, status), kind_(kind) {
    if (*status != nullptr) return;
    if (kind_ == Kind::kReshape) *status = ReadIntAttribute(info, name(), "allowzero", 0, &allowzero_);
    if (kind_ == Kind::kFlatten) *status = ReadIntAttribute(info, name(), "axis", 1, &axis_);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView data;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "data", &data));
    std::vector<int64_t> shape;
    ORTOPS_RETURN_IF_ERROR(OutputShape(context, data.shape, &shape));
    if (ElementCount(shape) != data.count) {
      return Fail("cannot give a tensor of shape " + ShapeText(data.shape) + " the shape " + ShapeText(shape));
    }
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      return run.CopyOnDevice(out, data.data, Bytes(data));
    });
  }

 private:
  OrtStatusPtr Axes(OrtKernelContext* context, std::vector<int64_t>* axes, bool* given) const {
    TensorView view;
    ORTOPS_RETURN_IF_ERROR(GetInput(context, 1, &view));
    *given = view.present;
    if (!view.present) return nullptr;
    return Ints(view, "axes", axes);
  }

  OrtStatusPtr OutputShape(OrtKernelContext* context, const std::vector<int64_t>& in, std::vector<int64_t>* out) const {
    switch (kind_) {
      case Kind::kIdentity: *out = in; return nullptr;
      case Kind::kFlatten: {
        // ONNX Flatten: axis in [-r, r]; a negative one counts from the back (axis + r), so -r and 0
        // both put every dimension into the inner one and r puts them all into the outer one.
        const auto r = static_cast<int64_t>(in.size());
        if (axis_ < -r || axis_ > r) {
          return Fail("axis " + std::to_string(axis_) + " is out of range [" + std::to_string(-r) + ", " +
                      std::to_string(r) + "] for input of shape " + ShapeText(in));
        }
        const int64_t axis = axis_ < 0 ? axis_ + r : axis_;
        int64_t outer = 1, inner = 1;
        for (size_t i = 0; i < in.size(); ++i) (static_cast<int64_t>(i) < axis ? outer : inner) *= in[i];
        *out = {outer, inner};
        return nullptr;
      }
      case Kind::kReshape: {
        TensorView view;
        ORTOPS_RETURN_IF_ERROR(Input(context, 1, "shape", &view));
        std::vector<int64_t> want;
        ORTOPS_RETURN_IF_ERROR(Ints(view, "shape", &want));
        int64_t known = 1;
        int inferred = -1;
        out->assign(want.size(), 0);
        for (size_t i = 0; i < want.size(); ++i) {
          int64_t d = want[i];
          if (d == 0 && allowzero_ == 0) {
            if (i >= in.size())
              return Fail("shape " + ShapeText(want) + " copies dimension " + std::to_string(i) + " of a rank-" +
                          std::to_string(in.size()) + " input");
            d = in[i];
          }
          if (d == -1) {
            if (inferred >= 0) return Fail("shape " + ShapeText(want) + " has more than one -1");
            inferred = static_cast<int>(i);
            continue;
          }
          if (d < 0) return Fail("shape " + ShapeText(want) + " has a negative dimension");
          (*out)[i] = d;
          known *= d;
        }
        if (inferred >= 0) {
          const auto total = static_cast<int64_t>(ElementCount(in));
          if (known == 0 || total % known != 0) {
            return Fail("cannot infer the -1 of shape " + ShapeText(want) + " for input shape " + ShapeText(in));
          }
          (*out)[static_cast<size_t>(inferred)] = total / known;
        }
        return nullptr;
      }
      case Kind::kSqueeze: {
        std::vector<int64_t> axes;
        bool given = false;
        ORTOPS_RETURN_IF_ERROR(Axes(context, &axes, &given));
        std::vector<bool> drop(in.size(), false);
        if (!given) {
          for (size_t i = 0; i < in.size(); ++i) drop[i] = in[i] == 1;
        }
        for (int64_t a : axes) {
          int64_t axis = 0;
          if (!NormalizeAxis(a, in.size(), &axis)) return Fail("axis " + std::to_string(a) + " out of range");
          if (in[static_cast<size_t>(axis)] != 1) {
            return Fail("cannot squeeze axis " + std::to_string(a) + " of shape " + ShapeText(in) + " (size is not 1)");
          }
          drop[static_cast<size_t>(axis)] = true;
        }
        out->clear();
        for (size_t i = 0; i < in.size(); ++i) {
          if (!drop[i]) out->push_back(in[i]);
        }
        return nullptr;
      }
      case Kind::kUnsqueeze: {
        std::vector<int64_t> axes;
        bool given = false;
        ORTOPS_RETURN_IF_ERROR(Axes(context, &axes, &given));
        if (!given) return Fail("input axes is missing");
        const size_t rank = in.size() + axes.size();
        std::vector<bool> inserted(rank, false);
        for (int64_t a : axes) {
          int64_t axis = 0;
          if (!NormalizeAxis(a, rank, &axis) || inserted[static_cast<size_t>(axis)]) {
            return Fail("axes " + ShapeText(axes) + " are out of range or repeated for rank " + std::to_string(rank));
          }
          inserted[static_cast<size_t>(axis)] = true;
        }
        out->clear();
        size_t next = 0;
        for (size_t i = 0; i < rank; ++i) out->push_back(inserted[i] ? 1 : in[next++]);
        return nullptr;
      }
    }
    return Fail("unknown shape op");
  }

  Kind kind_;
  int64_t allowzero_ = 0;
  int64_t axis_ = 1;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kF64, kI32, kI64, kBool}) {
    list.Add("Reshape", {In(t), HostInts()}, {In(t)}, Make<ShapeKernel, Kind::kReshape>)
        .Add("Squeeze", {In(t), HostInts(/*optional=*/true)}, {In(t)}, Make<ShapeKernel, Kind::kSqueeze>)
        .Add("Unsqueeze", {In(t), HostInts()}, {In(t)}, Make<ShapeKernel, Kind::kUnsqueeze>)
        .Add("Flatten", {In(t)}, {In(t)}, Make<ShapeKernel, Kind::kFlatten>)
        .Add("Identity", {In(t)}, {In(t)}, Make<ShapeKernel, Kind::kIdentity>);
  }
}

}  // namespace ortops::placed::shape
