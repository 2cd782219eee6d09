// Conv (1-D and 2-D, NCHW) placed on CANN: one CANN Conv2D. A 1-D convolution of X (N, C, L) with
// W (M, C/group, k) is the 2-D one of the same data viewed as (N, C, 1, L) and (M, C/group, 1, k)
// (strides [1, 1, 1, s], dilations [1, 1, 1, d], pads [0, 0, p0, p1]: CANN's order is [top,
// bottom, left, right], ONNX's [begins..., ends...]); B is Conv2D's optional bias input (GE
// nn_calculation_ops.h Conv2D; hicann/ops-nn conv/conv2d_v2/op_graph/conv2d_v2_proto.h: x, filter,
// bias of float32/float16/bfloat16). auto_pad SAME_UPPER / SAME_LOWER / VALID: the pads ONNX
// defines (output ceil(in / stride); SAME_UPPER puts the odd pad at the end) computed from X
// (SAME_* with dilations != 1: refused, as ORT's CPU EP does; ONNX's formula has no dilation).
#include <string>

#include "placed/common/conv_attributes.h"
#include "placed/common/placed_op.h"

namespace ortops::placed::conv {
namespace {

class ConvKernel : public PlacedKernel {
 public:
  ConvKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status) : PlacedKernel(info, op, status) {
    if (*status != nullptr) return;
    if ((*status = attrs_.Read(info, name())) != nullptr) return;
    std::string wrong = attrs_.Check();
    if (wrong.empty()) wrong = attrs_.CheckAutoPad();
    if (!wrong.empty()) *status = Fail(wrong);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, w, b;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "X", &x));
    ORTOPS_RETURN_IF_ERROR(Input(context, 1, "W", &w));
    ORTOPS_RETURN_IF_ERROR(GetInput(context, 2, &b));
    const size_t rank = x.shape.size();
    if ((rank != 3 && rank != 4) || w.shape.size() != rank) {
      return Fail("X " + ShapeText(x.shape) + " and W " + ShapeText(w.shape) +
                  " are not a 1-D (N, C, L) or 2-D (N, C, H, W) convolution");
    }
    const size_t spatial = rank - 2;
    const std::string misfit = attrs_.Fits(spatial);
    if (!misfit.empty()) return Fail(misfit);
    const int64_t group = attrs_.group, m = w.shape[0];
    if (x.shape[1] != w.shape[1] * group || m % group != 0) {
      return Fail("X " + ShapeText(x.shape) + " and W " + ShapeText(w.shape) + " do not fit group " +
                  std::to_string(group) + " (X's channels = W's dim 1 * group, W's dim 0 divisible by group)");
    }
    if (b.present && (b.shape.size() != 1 || b.shape[0] != m)) {
      return Fail("B " + ShapeText(b.shape) + " must have one value per output channel (" + std::to_string(m) + ")");
    }
    std::vector<int64_t> strides = As2d(attrs_.strides, spatial, 1), dilations = As2d(attrs_.dilations, spatial, 1);
    std::vector<int64_t> in, s, extent;  // per spatial axis: input extent, stride, dilated kernel extent
    for (size_t i = 0; i < spatial; ++i) {
      const int64_t k = w.shape[2 + i];
      if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape[i] != k) {
        return Fail("kernel_shape " + ShapeText(attrs_.kernel_shape) + " does not match W " + ShapeText(w.shape));
      }
      if (k < 1) return Fail("W " + ShapeText(w.shape) + " has an empty kernel");
      in.push_back(x.shape[2 + i]);
      s.push_back(strides[2 - spatial + i]);
      extent.push_back(dilations[2 - spatial + i] * (k - 1) + 1);
    }
    const std::vector<int64_t> pads = attrs_.ResolvePads(in, s, extent);
    std::vector<int64_t> shape{x.shape[0], m};
    for (size_t i = 0; i < spatial; ++i) {
      const int64_t padded = in[i] + pads[i] + pads[spatial + i];
      if (padded < extent[i]) {
        return Fail("the padded input (" + std::to_string(padded) + " along spatial axis " + std::to_string(i) +
                    ") is shorter than the dilated kernel (" + std::to_string(extent[i]) + "): X " +
                    ShapeText(x.shape) + ", W " + ShapeText(w.shape) + ", pads " + ShapeText(pads));
      }
      shape.push_back((padded - extent[i]) / s[i] + 1);
    }
    if (x.count == 0 && ElementCount(shape) != 0) {
      return Fail("X " + ShapeText(x.shape) + " is empty but the output " + ShapeText(shape) + " is not");
    }
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const aclDataType type = AclTypeOf(x.type);
      AclOp op(*run.acl, "Conv2D");
      op.Input(x.data, Bytes(x), type, As4d(x.shape), ACL_FORMAT_NCHW)
          .Input(w.data, Bytes(w), type, As4d(w.shape), ACL_FORMAT_NCHW);
      if (b.present) {
        op.Input(b.data, Bytes(b), type, b.shape);
      } else {
        op.AbsentInput();
      }
      return op.Output(out, ElementCount(shape) * ElementSize(x.type), type, As4d(shape), ACL_FORMAT_NCHW)
          .AttrInts("strides", {1, 1, strides[0], strides[1]})
          .AttrInts("pads", CannPads(pads, spatial))
          .AttrInts("dilations", {1, 1, dilations[0], dilations[1]})
          .AttrInt("groups", group)
          .AttrString("data_format", "NCHW")
          .Run(run.stream);
    });
  }

 private:
  ConvAttributes attrs_;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16}) {
    list.Add("Conv", {In(t), In(t), Optional(t)}, {In(t)}, Make<ConvKernel>);
  }
}

}  // namespace ortops::placed::conv
