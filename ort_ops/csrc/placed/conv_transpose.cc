// ConvTranspose (1-D and 2-D, NCHW) placed on CANN: the input gradient of the convolution whose
// filter is W, CANN Conv2DBackpropInput (input_size = the output shape as a constant int32 input,
// filter = W, out_backprop = X; pads in CANN's [top, bottom, left, right] order), then the bias
// added with CANN Add (in place, broadcasting [1, C, 1, 1]). 1-D input (N, C, L) is sent as
// (N, C, 1, L), W as (C, M/group, 1, k) (H = 1: stride, dilation 1, no pads;
// placed/common/conv_attributes.h). The pads, as ONNX defines them: explicit; zeros for VALID; for
// output_shape (which overrides pads) or auto_pad SAME_* (output_shape = input * stride) the total
// padding s * (in - 1) + output_padding + d * (k - 1) + 1 - output_shape split in two, the larger
// half at the begin unless SAME_UPPER. 3-D (route "3d", "3d_bias" with B): CANN
// Conv3DBackpropInputV2 (hicann/ops-nn conv/conv3d_backprop_input_v2: NCDHW, pads [front, back, top,
// bottom, left, right]; Ascend 950 and Atlas A2/A3), within its README's A2/A3 limits (strides h, w
// <= 63 and d <= 255, pads <= 255, dilations <= 255, kernel H, W <= 511), then Add of the bias
// ([1, C, 1, 1, 1]).
#include <algorithm>
#include <string>

#include "placed/common/conv_attributes.h"
#include "placed/common/placed_op.h"

namespace ortops::placed::conv_transpose {
namespace {

class ConvTransposeKernel : public PlacedKernel {
 public:
  ConvTransposeKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status) {
    if (*status != nullptr) return;
    size_t inputs = 0;
    if ((*status = Api().KernelInfo_GetInputCount(info, &inputs)) != nullptr) return;
    if (inputs > 2 && (*status = RequireRoute(*acl_, "bias")) != nullptr) return;  // + Add of the bias
    if ((*status = attrs_.Read(info, name())) != nullptr ||
        (*status = ReadIntsAttribute(info, name(), "output_padding", {}, &output_padding_)) != nullptr ||
        (*status = ReadIntsAttribute(info, name(), "output_shape", {}, &output_shape_)) != nullptr) {
      return;
    }
    std::string wrong = attrs_.Check(/*max_rank=*/3);
    if (wrong.empty()) wrong = attrs_.CheckAutoPad();
    if (!wrong.empty()) {
      *status = Fail(wrong);
    } else if (!output_padding_.empty() && attrs_.Rank() != 0 && output_padding_.size() != attrs_.Rank()) {
      *status = Fail("output_padding " + ShapeText(output_padding_) + " is not of the attributes' spatial rank");
    }
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, w, b;
    ORTOPS_RETURN_IF_ERROR(WeightedInputs(context, "W", &x, &w, &b));
    const size_t rank = x.shape.size();
    if (rank < 3 || rank > 5 || w.shape.size() != rank || x.shape[1] != w.shape[0]) {
      return Fail("X " + ShapeText(x.shape) + " and W " + ShapeText(w.shape) +
                  " are not a 1-D (N, C, L), 2-D (N, C, H, W) or 3-D (N, C, D, H, W) ConvTranspose");
    }
    const size_t spatial = rank - 2;
    const std::string misfit = attrs_.Fits(spatial);
    if (!misfit.empty()) return Fail(misfit);
    if (!output_padding_.empty() && output_padding_.size() != spatial) {
      return Fail("output_padding " + ShapeText(output_padding_) + " does not fit X " + ShapeText(x.shape));
    }
    const int64_t group = attrs_.group;
    if (x.shape[1] % group != 0) {
      return Fail("X " + ShapeText(x.shape) + "'s channels are not divisible by group " + std::to_string(group));
    }
    const std::vector<int64_t> strides = As2d(attrs_.strides, spatial, 1),
                               dilations = As2d(attrs_.dilations, spatial, 1);
    std::vector<int64_t> pads = attrs_.pads.empty() || attrs_.auto_pad != "NOTSET" || !output_shape_.empty()
                                    ? std::vector<int64_t>(2 * spatial, 0)
                                    : attrs_.pads;
    if (!output_shape_.empty() && output_shape_.size() != spatial && output_shape_.size() != rank) {
      return Fail("output_shape " + ShapeText(output_shape_) + " does not fit X " + ShapeText(x.shape));
    }
    const int64_t channels = w.shape[1] * group;
    std::vector<int64_t> shape{x.shape[0], channels};
    for (size_t i = 0; i < spatial; ++i) {
      const int64_t k = w.shape[2 + i], s = strides[strides.size() - spatial + i],
                    d = dilations[dilations.size() - spatial + i];
      const int64_t extra = output_padding_.empty() ? 0 : output_padding_[i];
      if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape[i] != k) {
        return Fail("kernel_shape " + ShapeText(attrs_.kernel_shape) + " does not match W " + ShapeText(w.shape));
      }
      if (extra < 0 || (extra >= s && extra >= d)) {
        return Fail("output_padding " + ShapeText(output_padding_) +
                    " must be >= 0 and smaller than the stride or "
                    "the dilation");
      }
      const int64_t full = s * (x.shape[2 + i] - 1) + extra + d * (k - 1) + 1;  // the unpadded output extent
      const bool same = attrs_.auto_pad.rfind("SAME", 0) == 0;
      if (!output_shape_.empty() || same) {
        const int64_t want =
            !output_shape_.empty() ? output_shape_[output_shape_.size() - spatial + i] : x.shape[2 + i] * s;
        ConvAttributes::SplitPad(full - want, attrs_.auto_pad == "SAME_UPPER", &pads[i], &pads[spatial + i]);
        if (pads[i] < 0) {
          return Fail("output size " + std::to_string(want) + " along spatial axis " + std::to_string(i) +
                      " needs a negative begin pad (" + std::to_string(pads[i]) + "): not supported on CANN");
        }
      }
      shape.push_back(full - pads[i] - pads[spatial + i]);
      // A negative end pad (output_shape beyond the transposed convolution) extends the output at the
      // end as output_padding does: positions no input reaches, sent as end pad 0 and a larger output.
      pads[spatial + i] = std::max<int64_t>(pads[spatial + i], 0);
      if (shape.back() <= 0) return Fail("the output would be empty: " + ShapeText(shape));
    }
    if (x.count == 0 && ElementCount(shape) != 0) {
      return Fail("X " + ShapeText(x.shape) + " is empty but the output " + ShapeText(shape) + " is not");
    }
    if (b.present && (b.shape.size() != 1 || b.shape[0] != channels)) {
      return Fail("B " + ShapeText(b.shape) + " must have one value per output channel (" + std::to_string(channels) +
                  ")");
    }
    if (spatial == 3) return Transpose3d(context, x, w, b, strides, dilations, pads, shape);
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const size_t count = ElementCount(shape);
      const aclDataType type = AclTypeOf(x.type);
      const size_t out_bytes = count * ElementSize(x.type);
      const std::vector<int64_t> shape4 = As4d(shape);
      const int32_t input_size[4] = {static_cast<int32_t>(shape4[0]), static_cast<int32_t>(shape4[1]),
                                     static_cast<int32_t>(shape4[2]), static_cast<int32_t>(shape4[3])};
      AclOp op(*run.acl, "Conv2DBackpropInput");
      op.ConstInput(input_size, sizeof input_size, ACL_INT32, {4})
          .Input(w.data, Bytes(w), type, As4d(w.shape), ACL_FORMAT_NCHW)
          .Input(x.data, Bytes(x), type, As4d(x.shape), ACL_FORMAT_NCHW)
          .Output(out, out_bytes, type, shape4, ACL_FORMAT_NCHW);
      ORTOPS_RETURN_IF_ERROR(
          ConvWindowAttributes(op, strides, CannPads(pads, spatial), dilations, group).Run(run.stream));
      if (!b.present) return nullptr;
      return AclOp(*run.acl, "Add")
          .Input(out, out_bytes, type, shape4)
          .Input(b.data, Bytes(b), type, {1, channels, 1, 1})
          .Output(out, out_bytes, type, shape4)
          .Run(run.stream);
    });
  }

 private:
  OrtStatusPtr Transpose3d(OrtKernelContext* context, const TensorView& x, const TensorView& w, const TensorView& b,
                           const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                           const std::vector<int64_t>& pads, const std::vector<int64_t>& shape) const {
    const std::vector<int64_t> cann_pads = CannPads(pads, 3);
    bool fits = strides[0] <= 255;
    for (size_t a = 0; a < 3; ++a) {
      fits = fits && dilations[a] <= 255 && cann_pads[2 * a] <= 255 && cann_pads[2 * a + 1] <= 255;
      if (a > 0) fits = fits && strides[a] <= 63 && w.shape[2 + a] <= 511;
    }
    if (!fits) {
      return Fail(Conv3dLimitsText("Conv3DBackpropInputV2", strides, dilations, w.shape, pads,
                                   "(strides: h, w <= 63, d <= 255; pads and dilations <= 255; kernel H, W <= 511)"));
    }
    if (x.count == 0) return Fail("X " + ShapeText(x.shape) + " is empty (CANN Conv3DBackpropInputV2 takes none)");
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      ORTOPS_RETURN_IF_ERROR(RequireRoute(*run.acl, b.present ? "3d_bias" : "3d"));
      const size_t out_bytes = ElementCount(shape) * ElementSize(x.type);
      const aclDataType type = AclTypeOf(x.type);
      int32_t input_size[5];
      for (size_t i = 0; i < 5; ++i) input_size[i] = static_cast<int32_t>(shape[i]);
      AclOp op(*run.acl, "Conv3DBackpropInputV2");
      op.ConstInput(input_size, sizeof input_size, ACL_INT32, {5})
          .Input(w.data, Bytes(w), type, w.shape, ACL_FORMAT_NCDHW)
          .Input(x.data, Bytes(x), type, x.shape, ACL_FORMAT_NCDHW)
          .Output(out, out_bytes, type, shape, ACL_FORMAT_NCDHW);
      ORTOPS_RETURN_IF_ERROR(ConvWindowAttributes(op, strides, cann_pads, dilations, attrs_.group).Run(run.stream));
      if (!b.present) return nullptr;
      return AclOp(*run.acl, "Add")
          .Input(out, out_bytes, type, shape)
          .Input(b.data, Bytes(b), type, {1, shape[1], 1, 1, 1})
          .Output(out, out_bytes, type, shape)
          .Run(run.stream);
    });
  }

  ConvAttributes attrs_;
  std::vector<int64_t> output_padding_, output_shape_;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16}) {
    list.Add("ConvTranspose", {In(t), In(t), Optional(t)}, {In(t)}, Make<ConvTransposeKernel>);
  }
}

}  // namespace ortops::placed::conv_transpose
