// ConvTranspose (2-D, NCHW, explicit pads, no output_shape) placed on CANN: the input gradient of
// the convolution whose filter is W, CANN Conv2DBackpropInput (input_size = the output shape as a
// constant int32 input, filter = W, out_backprop = X; pads in CANN's [top, bottom, left, right]
// order), then the bias added with CANN Add (in place, broadcasting [1, C, 1, 1]).
#include <string>

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
    std::string auto_pad;
    std::vector<int64_t> output_shape;
    if ((*status = ReadIntsAttribute(info, name(), "strides", {1, 1}, &strides_)) != nullptr ||
        (*status = ReadIntsAttribute(info, name(), "pads", {0, 0, 0, 0}, &pads_)) != nullptr ||
        (*status = ReadIntsAttribute(info, name(), "dilations", {1, 1}, &dilations_)) != nullptr ||
        (*status = ReadIntsAttribute(info, name(), "output_padding", {0, 0}, &output_padding_)) != nullptr ||
        (*status = ReadIntsAttribute(info, name(), "output_shape", {}, &output_shape)) != nullptr ||
        (*status = ReadIntsAttribute(info, name(), "kernel_shape", {}, &kernel_shape_)) != nullptr ||
        (*status = ReadIntAttribute(info, name(), "group", 1, &group_)) != nullptr ||
        (*status = ReadStringAttribute(info, name(), "auto_pad", "NOTSET", &auto_pad)) != nullptr) {
      return;
    }
    if (auto_pad != "NOTSET" || !output_shape.empty()) {
      *status = Fail("auto_pad " + auto_pad + " / output_shape are not supported (explicit pads only)");
    } else if (strides_.size() != 2 || pads_.size() != 4 || dilations_.size() != 2 || output_padding_.size() != 2) {
      *status = Fail("only 2-D ConvTranspose is supported");
    }
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, w, b;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "X", &x));
    ORTOPS_RETURN_IF_ERROR(Input(context, 1, "W", &w));
    ORTOPS_RETURN_IF_ERROR(GetInput(context, 2, &b));
    if (x.shape.size() != 4 || w.shape.size() != 4 || x.shape[1] != w.shape[0] || group_ < 1) {
      return Fail("X " + ShapeText(x.shape) + " and W " + ShapeText(w.shape) + " are not an NCHW ConvTranspose");
    }
    const int64_t channels = w.shape[1] * group_;
    std::vector<int64_t> shape{x.shape[0], channels, 0, 0};
    for (size_t i = 0; i < 2; ++i) {
      const int64_t k = w.shape[2 + i];
      if (!kernel_shape_.empty() && kernel_shape_[i] != k) return Fail("kernel_shape does not match W");
      if (output_padding_[i] >= strides_[i] && output_padding_[i] >= dilations_[i]) {
        return Fail("output_padding must be smaller than the stride or the dilation");
      }
      shape[2 + i] = strides_[i] * (x.shape[2 + i] - 1) + output_padding_[i] + dilations_[i] * (k - 1) + 1 - pads_[i] -
                     pads_[2 + i];
      if (shape[2 + i] <= 0) return Fail("the output would be empty: " + ShapeText(shape));
    }
    if (b.present && (b.shape.size() != 1 || b.shape[0] != channels)) {
      return Fail("B " + ShapeText(b.shape) + " must have one value per output channel (" + std::to_string(channels) +
                  ")");
    }
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const size_t count = ElementCount(shape);
      const aclDataType type = AclTypeOf(x.type);
      const size_t out_bytes = count * ElementSize(x.type);
      const int32_t input_size[4] = {static_cast<int32_t>(shape[0]), static_cast<int32_t>(shape[1]),
                                     static_cast<int32_t>(shape[2]), static_cast<int32_t>(shape[3])};
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "Conv2DBackpropInput")
                                 .ConstInput(input_size, sizeof input_size, ACL_INT32, {4})
                                 .Input(w.data, Bytes(w), type, w.shape, ACL_FORMAT_NCHW)
                                 .Input(x.data, Bytes(x), type, x.shape, ACL_FORMAT_NCHW)
                                 .Output(out, out_bytes, type, shape, ACL_FORMAT_NCHW)
                                 .AttrInts("strides", {1, 1, strides_[0], strides_[1]})
                                 .AttrInts("pads", {pads_[0], pads_[2], pads_[1], pads_[3]})
                                 .AttrInts("dilations", {1, 1, dilations_[0], dilations_[1]})
                                 .AttrInt("groups", group_)
                                 .AttrString("data_format", "NCHW")
                                 .Run(run.stream));
      if (!b.present) return nullptr;
      return AclOp(*run.acl, "Add")
          .Input(out, out_bytes, type, shape)
          .Input(b.data, Bytes(b), type, {1, channels, 1, 1})
          .Output(out, out_bytes, type, shape)
          .Run(run.stream);
    });
  }

 private:
  std::vector<int64_t> strides_, pads_, dilations_, output_padding_, kernel_shape_;
  int64_t group_ = 1;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16}) {
    list.Add("ConvTranspose", {In(t), In(t), Optional(t)}, {In(t)}, Make<ConvTransposeKernel>);
  }
}

}  // namespace ortops::placed::conv_transpose
