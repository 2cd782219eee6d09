// Conv (1-D and 2-D, NCHW) placed on CANN: one CANN Conv2D. A 1-D convolution of X (N, C, L) with
// W (M, C/group, k) is the 2-D one of the same data viewed as (N, C, 1, L) and (M, C/group, 1, k)
// (strides [1, 1, 1, s], dilations [1, 1, 1, d], pads [0, 0, p0, p1]: CANN's order is [top,
// bottom, left, right], ONNX's [begins..., ends...]); B is Conv2D's optional bias input (GE
// nn_calculation_ops.h Conv2D; hicann/ops-nn conv/conv2d_v2/op_graph/conv2d_v2_proto.h: x, filter,
// bias of float32/float16/bfloat16). auto_pad SAME_UPPER / SAME_LOWER / VALID: the pads ONNX
// defines (output ceil(in / stride); SAME_UPPER puts the odd pad at the end) computed from X
// (SAME_* with dilations != 1: refused, as ORT's CPU EP does; ONNX's formula has no dilation).
// 3-D (route "3d"): one CANN Conv3DV2 (hicann/ops-nn conv/conv3d_v2: NCDHW, strides / dilations
// [1, 1, d, h, w], pads [head, tail, top, bottom, left, right], groups; Ascend 950 and Atlas A2/A3),
// within its README's H/W limits (strides <= 63, pads <= 255, dilations <= 255, kernel <= 511) and
// without empty tensors. (The CANN EP sends 5-D Conv to Conv3D with NCHW descriptors, which CANN's
// Conv3D would not take.)
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
    std::string wrong = attrs_.Check(/*max_rank=*/3);
    if (wrong.empty()) wrong = attrs_.CheckAutoPad();
    if (!wrong.empty()) *status = Fail(wrong);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, w, b;
    ORTOPS_RETURN_IF_ERROR(WeightedInputs(context, "W", &x, &w, &b));
    const size_t rank = x.shape.size();
    if (rank < 3 || rank > 5 || w.shape.size() != rank) {
      return Fail("X " + ShapeText(x.shape) + " and W " + ShapeText(w.shape) +
                  " are not a 1-D (N, C, L), 2-D (N, C, H, W) or 3-D (N, C, D, H, W) convolution");
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
      s.push_back(strides[strides.size() - spatial + i]);
      extent.push_back(dilations[dilations.size() - spatial + i] * (k - 1) + 1);
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
    if (spatial == 3) return Conv3d(context, x, w, b, strides, dilations, pads, shape);
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
      op.Output(out, ElementCount(shape) * ElementSize(x.type), type, As4d(shape), ACL_FORMAT_NCHW);
      return ConvWindowAttributes(op, strides, CannPads(pads, spatial), dilations, group).Run(run.stream);
    });
  }

 private:
  OrtStatusPtr Conv3d(OrtKernelContext* context, const TensorView& x, const TensorView& w, const TensorView& b,
                      const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                      const std::vector<int64_t>& pads, const std::vector<int64_t>& shape) const {
    const std::vector<int64_t> cann_pads = CannPads(pads, 3);
    for (size_t a = 1; a < 3; ++a) {  // H and W
      if (strides[a] > 63 || dilations[a] > 255 || w.shape[2 + a] > 511 || cann_pads[2 * a] > 255 ||
          cann_pads[2 * a + 1] > 255) {
        return Fail(Conv3dLimitsText("Conv3DV2", strides, dilations, w.shape, pads,
                                     "on H and W (strides <= 63, dilations <= 255, kernel <= 511, pads <= 255)"));
      }
    }
    if (x.count == 0) return Fail("X " + ShapeText(x.shape) + " is empty (CANN Conv3DV2 takes no empty tensor)");
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      ORTOPS_RETURN_IF_ERROR(RequireRoute(*run.acl, "3d"));
      const aclDataType type = AclTypeOf(x.type);
      AclOp op(*run.acl, "Conv3DV2");
      op.Input(x.data, Bytes(x), type, x.shape, ACL_FORMAT_NCDHW)
          .Input(w.data, Bytes(w), type, w.shape, ACL_FORMAT_NCDHW);
      if (b.present) {
        op.Input(b.data, Bytes(b), type, b.shape);
      } else {
        op.AbsentInput();
      }
      op.Output(out, ElementCount(shape) * ElementSize(x.type), type, shape, ACL_FORMAT_NCDHW);
      return ConvWindowAttributes(op, strides, cann_pads, dilations, attrs_.group).Run(run.stream);
    });
  }

  ConvAttributes attrs_;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16}) {
    list.Add("Conv", {In(t), In(t), Optional(t)}, {In(t)}, Make<ConvKernel>);
  }
}

}  // namespace ortops::placed::conv
