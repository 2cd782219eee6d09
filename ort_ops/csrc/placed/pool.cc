// 2-D pooling (NCHW, explicit pads, no dilation) placed on CANN: MaxPool (without the Indices
// output) on CANN MaxPoolV3 and AveragePool on CANN AvgPoolV2 (exclusive = !count_include_pad;
// ksize H, W in [1, 255] with H * W < 256 and strides in [1, 63]: hicann/ops-nn pooling/avg_pool_v2/
// op_graph/avg_pool_v2_proto.h). Both: ksize/strides in NCHW positions, padding_mode CALCULATED,
// pads [top, bottom, left, right], ceil_mode with ONNX's rule (the last window starts inside the
// input or its begin padding), which both CANN ops share.
#include <string>

#include "placed/common/placed_op.h"

namespace ortops::placed::pool {
namespace {

class PoolKernel : public PlacedKernel {
 public:
  PoolKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status) : PlacedKernel(info, op, status) {
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
      *status = Fail(std::string("only 2-D ") + name() + " is supported");
    } else if (auto_pad != "NOTSET" || dilations != std::vector<int64_t>{1, 1}) {
      *status = Fail("auto_pad " + auto_pad + " and dilations other than 1 are not supported");
    }
  }

 protected:
  // The NCHW output shape of `x`, or the failure.
  OrtStatusPtr OutputShape(const TensorView& x, std::vector<int64_t>* shape) const {
    if (x.shape.size() != 4) return Fail("X " + ShapeText(x.shape) + " is not NCHW");
    *shape = {x.shape[0], x.shape[1], 0, 0};
    for (size_t i = 0; i < 2; ++i) {
      const int64_t span = x.shape[2 + i] + pads_[i] + pads_[2 + i] - kernel_[i];
      if (span < 0) return Fail("the window " + ShapeText(kernel_) + " is larger than the padded input");
      int64_t& o = (*shape)[2 + i];
      o = (ceil_mode_ ? (span + strides_[i] - 1) / strides_[i] : span / strides_[i]) + 1;
      // ONNX: with ceil_mode the last window must start inside the input or its begin padding.
      if (ceil_mode_ && (o - 1) * strides_[i] >= x.shape[2 + i] + pads_[i]) o -= 1;
    }
    return nullptr;
  }

  // The CANN op (MaxPoolV3 / AvgPoolV2) with the window attributes both take.
  void Window(AclOp& op) const {
    op.AttrInts("ksize", {1, 1, kernel_[0], kernel_[1]})
        .AttrInts("strides", {1, 1, strides_[0], strides_[1]})
        .AttrString("padding_mode", "CALCULATED")
        .AttrInts("pads", {pads_[0], pads_[2], pads_[1], pads_[3]})
        .AttrString("data_format", "NCHW")
        .AttrBool("global_pooling", false)
        .AttrBool("ceil_mode", ceil_mode_ != 0);
  }

  OrtStatusPtr Pool(OrtKernelContext* context, void (*extra)(const PoolKernel&, AclOp&)) const {
    TensorView x;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "X", &x));
    std::vector<int64_t> shape;
    ORTOPS_RETURN_IF_ERROR(OutputShape(x, &shape));
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const size_t count = ElementCount(shape);
      const aclDataType type = AclTypeOf(x.type);
      AclOp op(*run.acl, Launch(0));
      op.Input(x.data, Bytes(x), type, x.shape, ACL_FORMAT_NCHW)
          .Output(out, count * ElementSize(x.type), type, shape, ACL_FORMAT_NCHW);
      Window(op);
      if (extra != nullptr) extra(*this, op);
      return op.Run(run.stream);
    });
  }

  std::vector<int64_t> kernel_, strides_, pads_;
  int64_t ceil_mode_ = 0;
};

class MaxPoolKernel : public PoolKernel {
 public:
  using PoolKernel::PoolKernel;
  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override { return Pool(context, nullptr); }
};

class AveragePoolKernel : public PoolKernel {
 public:
  AveragePoolKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PoolKernel(info, op, status) {
    if (*status != nullptr) return;
    if ((*status = ReadIntAttribute(info, name(), "count_include_pad", 0, &count_include_pad_)) != nullptr) return;
    const bool fits = kernel_[0] >= 1 && kernel_[1] >= 1 && kernel_[0] <= 255 && kernel_[1] <= 255 &&
                      kernel_[0] * kernel_[1] < 256 && strides_[0] >= 1 && strides_[1] >= 1 && strides_[0] <= 63 &&
                      strides_[1] <= 63;
    if (!fits) {
      *status = Fail("kernel_shape " + ShapeText(kernel_) + " / strides " + ShapeText(strides_) +
                     " exceed CANN AvgPoolV2's limits (kernel dims in [1, 255], area < 256, strides in [1, 63])");
    }
  }
  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    return Pool(context, [](const PoolKernel& self, AclOp& op) {
      op.AttrBool("exclusive", static_cast<const AveragePoolKernel&>(self).count_include_pad_ == 0);
    });
  }

 private:
  int64_t count_include_pad_ = 0;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16}) {
    list.Add("MaxPool", {In(t)}, {In(t)}, Make<MaxPoolKernel>);
    list.Add("AveragePool", {In(t)}, {In(t)}, Make<AveragePoolKernel>);
  }
}

}  // namespace ortops::placed::pool
