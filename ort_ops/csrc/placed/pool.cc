// MaxPool (2-D, NCHW, explicit pads, no dilation, without the Indices output) placed on CANN:
// CANN MaxPoolV3 (ksize/strides in NCHW positions, padding_mode CALCULATED, pads [top, bottom,
// left, right], ceil_mode).
#include <string>

#include "placed/common/placed_op.h"

namespace ortops::placed::pool {
namespace {

class MaxPoolKernel : public PlacedKernel {
 public:
  MaxPoolKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status) {
    if (*status != nullptr) return;
    std::string auto_pad;
    std::vector<int64_t> dilations;
    if ((*status = ReadIntsAttribute(info, name(), "kernel_shape", {}, &kernel_)) != nullptr ||
        (*status = ReadIntsAttribute(info, name(), "strides", {1, 1}, &strides_)) != nullptr ||
        (*status = ReadIntsAttribute(info, name(), "pads", {0, 0, 0, 0}, &pads_)) != nullptr ||
        (*status = ReadIntsAttribute(info, name(), "dilations", {1, 1}, &dilations)) != nullptr ||
        (*status = ReadIntAttribute(info, name(), "ceil_mode", 0, &ceil_mode_)) != nullptr ||
        (*status = ReadStringAttribute(info, name(), "auto_pad", "NOTSET", &auto_pad)) != nullptr) {
      return;
    }
    if (kernel_.size() != 2 || strides_.size() != 2 || pads_.size() != 4) {
      *status = Fail("only 2-D MaxPool is supported");
    } else if (auto_pad != "NOTSET" || dilations != std::vector<int64_t>{1, 1}) {
      *status = Fail("auto_pad " + auto_pad + " and dilations other than 1 are not supported");
    }
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "X", &x));
    if (x.shape.size() != 4) return Fail("X " + ShapeText(x.shape) + " is not NCHW");
    std::vector<int64_t> shape{x.shape[0], x.shape[1], 0, 0};
    for (size_t i = 0; i < 2; ++i) {
      const int64_t span = x.shape[2 + i] + pads_[i] + pads_[2 + i] - kernel_[i];
      if (span < 0) return Fail("the window " + ShapeText(kernel_) + " is larger than the padded input");
      shape[2 + i] = (ceil_mode_ ? (span + strides_[i] - 1) / strides_[i] : span / strides_[i]) + 1;
      // ONNX: with ceil_mode the last window must start inside the input or its begin padding.
      if (ceil_mode_ && (shape[2 + i] - 1) * strides_[i] >= x.shape[2 + i] + pads_[i]) shape[2 + i] -= 1;
    }
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const size_t count = ElementCount(shape);
      const aclDataType type = AclTypeOf(x.type);
      return AclOp(*run.acl, "MaxPoolV3")
          .Input(x.data, Bytes(x), type, x.shape, ACL_FORMAT_NCHW)
          .Output(out, count * ElementSize(x.type), type, shape, ACL_FORMAT_NCHW)
          .AttrInts("ksize", {1, 1, kernel_[0], kernel_[1]})
          .AttrInts("strides", {1, 1, strides_[0], strides_[1]})
          .AttrString("padding_mode", "CALCULATED")
          .AttrInts("pads", {pads_[0], pads_[2], pads_[1], pads_[3]})
          .AttrString("data_format", "NCHW")
          .AttrBool("global_pooling", false)
          .AttrBool("ceil_mode", ceil_mode_ != 0)
          .Run(run.stream);
    });
  }

 private:
  std::vector<int64_t> kernel_, strides_, pads_;
  int64_t ceil_mode_ = 0;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16}) list.Add("MaxPool", {In(t)}, {In(t)}, Make<MaxPoolKernel>);
}

}  // namespace ortops::placed::pool
