// Pooling placed on CANN: MaxPool (without the Indices output) and AveragePool.
// - 1-D and 2-D without dilation: CANN MaxPoolV3 / AvgPoolV2 (exclusive = !count_include_pad; ksize
//   H, W in [1, 255] with H * W < 256 and strides in [1, 63]: hicann/ops-nn pooling/avg_pool_v2/
//   op_graph/avg_pool_v2_proto.h). Both: ksize/strides in NCHW positions, padding_mode CALCULATED,
//   pads [top, bottom, left, right], ceil_mode with ONNX's rule (the last window starts inside the
//   input or its begin padding), which both CANN ops share. A 1-D pool over (N, C, L) is the 2-D
//   one over (N, C, 1, L) (ksize [1, 1, 1, k]).
// - MaxPool 3-D, or dilated (route "3d"): CANN MaxPool3D (hicann/ops-nn pooling/max_pool3_d: NCDHW,
//   ksize / strides / dilation [1, 1, d, h, w], padding CALCULATED, pads [front, back, top, bottom,
//   left, right], each smaller than the dilated kernel extent, ceil_mode as an int with ONNX's
//   rule); 1-D and 2-D run as (N, C, 1, 1, L) and (N, C, 1, H, W).
// - AveragePool 3-D without dilation (route "3d"): CANN AvgPool3D (pooling/avg_pool3_d: NCDHW, the
//   same pads, count_include_pad, divisor_override 0). Its Atlas A2/A3 kernels use each axis's front
//   pad at both ends for the divisor (op_host/avg_pool3_d_tiling.cpp:641-649): count_include_pad
//   with a back pad other than the front one fails the run there rather than divide wrongly.
// - AveragePool with dilations (route "dilated"; 1-D, 2-D and 3-D as (N*C, 1, D, H, W)): the window
//   sums as CANN Conv3DV2 with a filter of ones (hicann/ops-nn conv/conv3d_v2; the same strides,
//   dilations and pads, the back pads extended to ceil_mode's last window), then CANN RealDiv by
//   each window's divisor [1, 1, oD, oH, oW]: its taps inside the input (count_include_pad 0) or
//   inside the input and its pads (1; ceil_mode's extension is not counted), ONNX's definition.
//   The ones and the divisors depend only on the attributes and X's spatial shape: copied to the
//   device once per session (placed/common/device_constant.h).
// - MaxPool with its Indices output (1-D, 2-D, 3-D without dilation, pads equal at both ends and at
//   most half the kernel): CANN MaxPool3DWithArgmaxV2 (pooling/max_pool3d_with_argmax_v2: Atlas
//   A2/A3 and Ascend 950; its golden is torch's max_pool3d with indices: the int32 index of the
//   maximum in its (n, c) plane), then ONNX's int64 indices into the whole tensor: storage_order 0
//   (route "indices") CANN Cast to int64 and Add of each plane's offset (n * C + c) * D * H * W;
//   storage_order 1 (1-D, 2-D; route "indices_column_major") CANN GatherElementsV2 of a table of
//   each plane position's column-major index plus its plane's offset (int32, so the tensor must
//   have at most INT32_MAX elements), then Cast. The offsets and the table depend only on X's
//   shape: copied to the device once per session.
// - MaxPool of uint8 / int8 (1-D, 2-D; route "integer"): CANN Cast to float16 (every value exact),
//   MaxPoolV3, Cast back (exact: the maximum is one of the values). MaxPoolV3's integer types are
//   Ascend 950's build only (pooling/max_pool_v3/op_host/max_pool_v3_def.cpp).
// auto_pad SAME_UPPER / SAME_LOWER / VALID: ONNX's pads computed from X (output ceil(in / stride),
// resp. floor((in - extent) / stride) + 1), sent as explicit pads with ceil_mode off (ONNX's SAME
// and VALID sizes ignore ceil_mode; placement leaves auto_pad with ceil_mode = 1 on the CPU).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "cann/sequence_kernel.h"
#include "common/float_convert.h"
#include "placed/common/conv_attributes.h"
#include "placed/common/device_constant.h"
#include "placed/common/placed_op.h"

namespace ortops::placed::pool {
namespace {

// `values` (one per spatial axis, `fallback` each if absent) as `rank` values, 1 for the leading
// axes a lower-rank pool does not have.
std::vector<int64_t> Widen(const std::vector<int64_t>& values, size_t spatial, size_t rank, int64_t fallback) {
  std::vector<int64_t> out(rank - spatial, 1);
  for (size_t i = 0; i < spatial; ++i) out.push_back(values.empty() ? fallback : values[i]);
  return out;
}

class PoolKernel : public PlacedKernel {
 public:
  PoolKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status, bool max)
      : PlacedKernel(info, op, status) {
    if (*status != nullptr) return;
    if ((*status = attrs_.Read(info, name())) != nullptr ||
        (*status = ReadIntAttribute(info, name(), "ceil_mode", 0, &ceil_mode_)) != nullptr) {
      return;
    }
    std::string wrong = attrs_.Check(/*max_rank=*/3);
    if (wrong.empty()) wrong = attrs_.CheckAutoPad();
    const size_t spatial = attrs_.Rank();
    bool dilated = false;
    for (int64_t d : attrs_.dilations) dilated = dilated || d != 1;
    window_3d_ = spatial == 3 || dilated;
    dilated_average_ = dilated && !max;
    if (!wrong.empty()) {
      *status = Fail(wrong);
    } else if (attrs_.kernel_shape.empty() || attrs_.kernel_shape.size() != spatial) {
      *status = Fail("kernel_shape " + ShapeText(attrs_.kernel_shape) + " must give one size per spatial axis");
    } else if (attrs_.auto_pad != "NOTSET" && ceil_mode_ != 0) {
      *status = Fail("auto_pad " + attrs_.auto_pad + " with ceil_mode 1 is not supported (ONNX's sizes ignore it)");
    } else {
      for (int64_t k : attrs_.kernel_shape) {
        if (k < 1) *status = Fail("kernel_shape " + ShapeText(attrs_.kernel_shape) + " must be >= 1");
      }
      const size_t rank = window_3d_ ? 3 : 2;
      kernel_ = Widen(attrs_.kernel_shape, spatial, rank, 1);
      strides_ = Widen(attrs_.strides, spatial, rank, 1);
      dilations_ = Widen(attrs_.dilations, spatial, rank, 1);
    }
  }

 protected:
  // The window of `x` (the node's spatial rank + 2): `shape` its output shape, `pads` CANN's for
  // the 2-D / 3-D view ([top, bottom, left, right] / [front, back, top, bottom, left, right]); or
  // the failure.
  OrtStatusPtr Geometry(const TensorView& x, std::vector<int64_t>* shape, std::vector<int64_t>* pads) const {
    const size_t spatial = attrs_.Rank(), rank = kernel_.size();
    if (x.shape.size() != spatial + 2) {
      return Fail("X " + ShapeText(x.shape) + " does not have " + std::to_string(spatial) + " spatial dims");
    }
    const std::vector<int64_t> in(x.shape.begin() + 2, x.shape.end());
    std::vector<int64_t> s, extent;
    for (size_t i = 0; i < spatial; ++i) {
      const size_t w = rank - spatial + i;
      s.push_back(strides_[w]);
      extent.push_back(dilations_[w] * (kernel_[w] - 1) + 1);
    }
    const std::vector<int64_t> onnx_pads = attrs_.ResolvePads(in, s, extent);
    *shape = {x.shape[0], x.shape[1]};
    for (size_t i = 0; i < spatial; ++i) {
      const int64_t span = in[i] + onnx_pads[i] + onnx_pads[spatial + i] - extent[i];
      if (span < 0) {
        return Fail("the window " + ShapeText(attrs_.kernel_shape) + " (dilations " + ShapeText(attrs_.dilations) +
                    ") is larger than the padded input X " + ShapeText(x.shape) + " (pads " + ShapeText(onnx_pads) +
                    ")");
      }
      int64_t o = (ceil_mode_ ? (span + s[i] - 1) / s[i] : span / s[i]) + 1;
      // ONNX: with ceil_mode the last window must start inside the input or its begin padding.
      if (ceil_mode_ && (o - 1) * s[i] >= in[i] + onnx_pads[i]) o -= 1;
      shape->push_back(o);
    }
    if (!window_3d_) {
      *pads = CannPads(onnx_pads, spatial);
    } else {
      pads->assign(2 * (3 - spatial), 0);  // [begin, end] per axis, D first
      for (size_t i = 0; i < spatial; ++i) {
        pads->push_back(onnx_pads[i]);
        pads->push_back(onnx_pads[spatial + i]);
      }
    }
    return nullptr;
  }

  // The 5-D NCDHW view of an (N, C, spatial...) shape.
  static std::vector<int64_t> As5d(const std::vector<int64_t>& shape) {
    std::vector<int64_t> out(shape.begin(), shape.begin() + 2);
    out.insert(out.end(), 5 - shape.size(), 1);
    out.insert(out.end(), shape.begin() + 2, shape.end());
    return out;
  }

  // `extra`: the AveragePool attributes (nullptr for MaxPool); `include_pad`: count_include_pad.
  OrtStatusPtr Pool(OrtKernelContext* context, void (*extra)(const PoolKernel&, AclOp&), bool include_pad) const {
    TensorView x;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "X", &x));
    std::vector<int64_t> shape, pads;
    ORTOPS_RETURN_IF_ERROR(Geometry(x, &shape, &pads));
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const size_t count = ElementCount(shape);
      const aclDataType type = AclTypeOf(x.type);
      if (x.type == kU8 || x.type == kI8) return IntegerMaxPool(context, run, x, shape, pads, out);
      if (dilated_average_) return DilatedAverage(context, run, x, shape, pads, include_pad, out);
      if (window_3d_ && extra != nullptr) {
        ORTOPS_RETURN_IF_ERROR(RequireRoute(*run.acl, "3d"));
        const std::string family = cann::SocFamily(cann::SocName(*run.acl));
        if (include_pad && (family == "ascend910b" || family == "ascend910_93") &&
            (pads[0] != pads[1] || pads[2] != pads[3] || pads[4] != pads[5])) {
          return Fail("count_include_pad with pads " + ShapeText(pads) +
                      " (front, back per axis) that differ at the two ends: CANN AvgPool3D on Atlas A2/A3 divides by "
                      "the window as if both ends had the front pad");
        }
        return AclOp(*run.acl, "AvgPool3D")
            .Input(x.data, Bytes(x), type, x.shape, ACL_FORMAT_NCDHW)
            .Output(out, count * ElementSize(x.type), type, shape, ACL_FORMAT_NCDHW)
            .AttrInts("ksize", kernel_)
            .AttrInts("strides", strides_)
            .AttrInts("pads", pads)
            .AttrBool("ceil_mode", ceil_mode_ != 0)
            .AttrBool("count_include_pad", include_pad)
            .AttrInt("divisor_override", 0)
            .AttrString("data_format", "NCDHW")
            .Run(run.stream);
      }
      if (window_3d_) {
        ORTOPS_RETURN_IF_ERROR(RequireRoute(*run.acl, "3d"));
        return AclOp(*run.acl, "MaxPool3D")
            .Input(x.data, Bytes(x), type, As5d(x.shape), ACL_FORMAT_NCDHW)
            .Output(out, count * ElementSize(x.type), type, As5d(shape), ACL_FORMAT_NCDHW)
            .AttrInts("ksize", {1, 1, kernel_[0], kernel_[1], kernel_[2]})
            .AttrInts("strides", {1, 1, strides_[0], strides_[1], strides_[2]})
            .AttrInts("dilation", {1, 1, dilations_[0], dilations_[1], dilations_[2]})
            .AttrString("padding", "CALCULATED")
            .AttrInts("pads", pads)
            .AttrInt("ceil_mode", ceil_mode_ != 0 ? 1 : 0)
            .AttrString("data_format", "NCDHW")
            .Run(run.stream);
      }
      AclOp op(*run.acl, Launch(0));
      op.Input(x.data, Bytes(x), type, As4d(x.shape), ACL_FORMAT_NCHW)
          .Output(out, count * ElementSize(x.type), type, As4d(shape), ACL_FORMAT_NCHW);
      Window2d(op, pads);
      if (extra != nullptr) extra(*this, op);
      return op.Run(run.stream);
    });
  }

  // The window attributes of MaxPoolV3 / AvgPoolV2 (2-D view; `pads` CANN's).
  void Window2d(AclOp& op, const std::vector<int64_t>& pads) const {
    op.AttrInts("ksize", {1, 1, kernel_[0], kernel_[1]})
        .AttrInts("strides", {1, 1, strides_[0], strides_[1]})
        .AttrString("padding_mode", "CALCULATED")
        .AttrInts("pads", pads)
        .AttrString("data_format", "NCHW")
        .AttrBool("global_pooling", false)
        .AttrBool("ceil_mode", ceil_mode_ != 0);
  }

  // uint8 / int8: MaxPoolV3 on float16 copies, every value exact.
  OrtStatusPtr IntegerMaxPool(OrtKernelContext* context, const CannRun& begun, const TensorView& x,
                              const std::vector<int64_t>& shape, const std::vector<int64_t>& pads, void* out) const {
    if (window_3d_)
      return Fail(std::string("3-D or dilated MaxPool of ") + ElementTypeName(x.type) + " is not supported");
    ORTOPS_RETURN_IF_ERROR(RequireRoute(*begun.acl, "integer"));
    cann::SequenceRun run;
    static_cast<CannRun&>(run) = begun;
    cann::ScratchLayout layout;
    const size_t in_at = layout.Add(x.count * sizeof(uint16_t));
    const size_t out_at = layout.Add(ElementCount(shape) * sizeof(uint16_t));
    ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, x.memory, layout.size()));
    const aclDataType type = AclTypeOf(x.type);
    ORTOPS_RETURN_IF_ERROR(run.Cast(x.data, type, run.Scratch(in_at), ACL_FLOAT16, x.shape));
    AclOp op(*run.acl, "MaxPoolV3");
    op.Input(run.Scratch(in_at), x.count * sizeof(uint16_t), ACL_FLOAT16, As4d(x.shape), ACL_FORMAT_NCHW)
        .Output(run.Scratch(out_at), ElementCount(shape) * sizeof(uint16_t), ACL_FLOAT16, As4d(shape), ACL_FORMAT_NCHW);
    Window2d(op, pads);
    ORTOPS_RETURN_IF_ERROR(op.Run(run.stream));
    return run.Cast(run.Scratch(out_at), ACL_FLOAT16, out, type, shape);
  }

  // AveragePool with dilations: Conv3DV2 of a ones filter over (N*C, 1, D, H, W), RealDiv by the
  // divisors. `pads`: [front, back] per axis of the 3-D view.
  OrtStatusPtr DilatedAverage(OrtKernelContext* context, const CannRun& begun, const TensorView& x,
                              const std::vector<int64_t>& shape, std::vector<int64_t> pads, bool include_pad,
                              void* out) const {
    ORTOPS_RETURN_IF_ERROR(RequireRoute(*begun.acl, "dilated"));
    const std::vector<int64_t> in5 = As5d(x.shape), out5 = As5d(shape);
    const std::vector<int64_t> pads_given = pads;
    int64_t weights = 1, divisors = 1;
    for (size_t i = 0; i < 3; ++i) {
      const int64_t in = in5[2 + i], o = out5[2 + i], extent = dilations_[i] * (kernel_[i] - 1) + 1;
      // ceil_mode's last window may end past the back pad: the convolution pads to its end.
      pads[2 * i + 1] = std::max(pads[2 * i + 1], (o - 1) * strides_[i] + extent - in - pads[2 * i]);
      weights *= kernel_[i];
      divisors *= o;
    }
    for (size_t i = 0; i < 3; ++i) {
      const bool d_axis = i == 0;
      if ((!d_axis && (strides_[i] > 63 || dilations_[i] > 255 || kernel_[i] > 511 || pads[2 * i] > 255 ||
                       pads[2 * i + 1] > 255))) {
        return Fail("dilated AveragePool with kernel " + ShapeText(kernel_) + ", strides " + ShapeText(strides_) +
                    ", dilations " + ShapeText(dilations_) + " and pads " + ShapeText(pads) +
                    " exceeds CANN Conv3DV2's limits on H and W (strides <= 63, dilations <= 255, kernel <= 511, "
                    "pads <= 255)");
      }
    }
    const size_t elem = ElementSize(x.type);
    const size_t weight_bytes = static_cast<size_t>(weights) * elem;
    const size_t divisor_at = cann::ScratchAligned(weight_bytes);
    const auto host_constants = [&] {
      return WindowConstants(in5, out5, pads_given, include_pad, x.type, divisor_at, divisors);
    };
    const void* constants = nullptr;
    const std::vector<int64_t> key(in5.begin() + 2, in5.end());
    ORTOPS_RETURN_IF_ERROR(constant_.Get(context, x.memory, begun, key, host_constants, &constants));
    const aclDataType type = AclTypeOf(x.type);
    const size_t count = ElementCount(shape);
    cann::SequenceRun run;
    static_cast<CannRun&>(run) = begun;
    cann::ScratchLayout layout;
    const size_t sum_at = layout.Add(count * elem);
    // Another spatial shape than the cached one: this run copies its own.
    const size_t own_at = layout.Add(constants == nullptr ? divisor_at + static_cast<size_t>(divisors) * elem : 0);
    ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, x.memory, layout.size()));
    if (constants == nullptr) {
      const std::vector<char> own = host_constants();
      ORTOPS_RETURN_IF_ERROR(run.CopyFromHostAndWait(run.Scratch(own_at), own.data(), own.size()));
      constants = run.Scratch(own_at);
    }
    const auto* ones = static_cast<const char*>(constants);
    const std::vector<int64_t> planes{x.shape[0] * x.shape[1], 1, in5[2], in5[3], in5[4]};
    const std::vector<int64_t> sums{x.shape[0] * x.shape[1], 1, out5[2], out5[3], out5[4]};
    ORTOPS_RETURN_IF_ERROR(
        AclOp(*run.acl, "Conv3DV2")
            .Input(x.data, Bytes(x), type, planes, ACL_FORMAT_NCDHW)
            .Input(ones, weight_bytes, type, {1, 1, kernel_[0], kernel_[1], kernel_[2]}, ACL_FORMAT_NCDHW)
            .Output(run.Scratch(sum_at), count * elem, type, sums, ACL_FORMAT_NCDHW)
            .AttrInts("strides", {1, 1, strides_[0], strides_[1], strides_[2]})
            .AttrInts("pads", pads)
            .AttrInts("dilations", {1, 1, dilations_[0], dilations_[1], dilations_[2]})
            .AttrInt("groups", 1)
            .AttrString("data_format", "NCDHW")
            .Run(run.stream));
    return AclOp(*run.acl, "RealDiv")
        .Input(run.Scratch(sum_at), count * elem, type, sums)
        .Input(ones + divisor_at, static_cast<size_t>(divisors) * elem, type, {1, 1, out5[2], out5[3], out5[4]})
        .Output(out, count * elem, type, sums)
        .Run(run.stream);
  }

  // The ones filter, then (at `divisor_at`) each window's divisor, in X's float type: the taps
  // o * stride - front + k * dilation (k < kernel) inside [0, in) per axis, or with
  // count_include_pad inside [-front, in + back) (ONNX's pads, not ceil_mode's extension).
  std::vector<char> WindowConstants(const std::vector<int64_t>& in5, const std::vector<int64_t>& out5,
                                    const std::vector<int64_t>& pads, bool include_pad, ONNXTensorElementDataType type,
                                    size_t divisor_at, int64_t divisors) const {
    const size_t elem = ElementSize(type);
    std::vector<char> bytes(divisor_at + static_cast<size_t>(divisors) * elem);
    auto put = [&](size_t at, float v) {
      if (type == kF32) {
        std::memcpy(bytes.data() + at, &v, sizeof(float));
      } else {
        const uint16_t h = type == kF16 ? FloatToHalf(v) : FloatToBFloat16(v);
        std::memcpy(bytes.data() + at, &h, sizeof(uint16_t));
      }
    };
    for (int64_t i = 0; i < kernel_[0] * kernel_[1] * kernel_[2]; ++i) put(static_cast<size_t>(i) * elem, 1.0f);
    std::vector<std::vector<int64_t>> taps(3);  // per axis and output position: the taps counted
    for (size_t a = 0; a < 3; ++a) {
      const int64_t in = in5[2 + a], lo = include_pad ? -pads[2 * a] : 0, hi = include_pad ? in + pads[2 * a + 1] : in;
      for (int64_t o = 0; o < out5[2 + a]; ++o) {
        int64_t n = 0;
        for (int64_t k = 0; k < kernel_[a]; ++k) {
          const int64_t p = o * strides_[a] - pads[2 * a] + k * dilations_[a];
          n += p >= lo && p < hi ? 1 : 0;
        }
        taps[a].push_back(n);
      }
    }
    size_t at = divisor_at;
    for (int64_t d : taps[0]) {
      for (int64_t h : taps[1]) {
        for (int64_t w : taps[2]) {
          put(at, static_cast<float>(d * h * w));
          at += elem;
        }
      }
    }
    return bytes;
  }

  ConvAttributes attrs_;
  mutable cann::ScratchUser scratch_;
  mutable DeviceConstant constant_;                    // the dilated AveragePool's ones and divisors
  bool dilated_average_ = false;                       // AveragePool with dilations: Conv3DV2 + RealDiv
  bool window_3d_ = false;                             // MaxPool3D (3-D or dilated) rather than the 2-D ops
  std::vector<int64_t> kernel_, strides_, dilations_;  // of the 2-D ([h, w]) or 3-D ([d, h, w]) view
  int64_t ceil_mode_ = 0;
};

class MaxPoolKernel : public PoolKernel {
 public:
  MaxPoolKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PoolKernel(info, op, status, /*max=*/true) {
    if (*status == nullptr) *status = ReadIntAttribute(info, name(), "storage_order", 0, &storage_order_);
  }
  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    if (HasOutput(context, 1)) return WithIndices(context);
    return Pool(context, nullptr, false);
  }

 private:
  // Y and ONNX's Indices: MaxPool3DWithArgmaxV2, then the plane indices made ONNX's.
  OrtStatusPtr WithIndices(OrtKernelContext* context) const {
    TensorView x;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "X", &x));
    std::vector<int64_t> shape, pads;
    ORTOPS_RETURN_IF_ERROR(Geometry(x, &shape, &pads));
    if (x.type != kF32 && x.type != kF16 && x.type != kBF16) {
      return Fail(std::string("the Indices output of a MaxPool of ") + ElementTypeName(x.type) +
                  " (CANN MaxPool3DWithArgmaxV2 takes float32, float16, bfloat16)");
    }
    const size_t spatial = x.shape.size() - 2;
    const bool column_major = storage_order_ == 1 && spatial > 1;
    if (storage_order_ != 0 && storage_order_ != 1) {
      return Fail("storage_order " + std::to_string(storage_order_) + " is not 0 or 1");
    }
    if (column_major && spatial == 3) return Fail("column-major (storage_order 1) Indices of a 3-D MaxPool");
    // The 3-D view's window: Geometry's pads are [begin, end] per axis of the 2-D or 3-D view.
    if (pads.size() == 4) pads.insert(pads.begin(), {0, 0});
    const std::vector<int64_t> kernel = Widen(attrs_.kernel_shape, spatial, 3, 1);
    const std::vector<int64_t> strides = Widen(attrs_.strides, spatial, 3, 1);
    const std::vector<int64_t> dilations = Widen(attrs_.dilations, spatial, 3, 1);
    for (size_t a = 0; a < 3; ++a) {
      if (dilations[a] != 1) return Fail("the Indices output of a dilated MaxPool (CANN's argmax pool: dilation 1)");
      if (pads[2 * a] != pads[2 * a + 1] || pads[2 * a] > kernel[a] / 2) {
        return Fail("the Indices output with pads " + ShapeText(pads) +
                    " (begin, end per axis): CANN MaxPool3DWithArgmaxV2 takes pads equal at both ends and at most "
                    "half the kernel");
      }
    }
    const std::vector<int64_t> in5 = As5d(x.shape), out5 = As5d(shape);
    const int64_t planes = x.shape[0] * x.shape[1], plane = in5[2] * in5[3] * in5[4];
    if (plane > INT32_MAX || (column_major && planes * plane > INT32_MAX)) {
      return Fail("X " + ShapeText(x.shape) + " has more positions than CANN's int32 argmax indexes");
    }
    void* indices = nullptr;
    bool with_indices = false;  // an Indices output named "" is not produced: Y alone
    ORTOPS_RETURN_IF_ERROR(AllocateOptionalOutput(context, 1, shape, &indices, &with_indices));
    if (!with_indices) return Pool(context, nullptr, false);
    return OnOutput(context, shape, [&](CannRun& begun, void* out) -> OrtStatusPtr {
      const char* route = column_major ? "indices_column_major" : "indices";
      ORTOPS_RETURN_IF_ERROR(RequireRoute(*begun.acl, route));
      const size_t count = ElementCount(shape);
      // The offsets ([planes] int64) or the column-major table ([planes, plane] int32).
      const size_t constant_bytes = column_major ? static_cast<size_t>(planes * plane) * sizeof(int32_t)
                                                 : static_cast<size_t>(planes) * sizeof(int64_t);
      const auto host_constants = [&] { return IndexConstants(in5, column_major); };
      const void* constants = nullptr;
      if (constant_bytes <= kMaxConstantBytes) {
        ORTOPS_RETURN_IF_ERROR(index_constant_.Get(context, x.memory, begun, x.shape, host_constants, &constants));
      }
      cann::SequenceRun run;
      static_cast<CannRun&>(run) = begun;
      cann::ScratchLayout layout;
      const size_t argmax_at = layout.Add(count * sizeof(int32_t));
      const size_t wide_at = layout.Add(column_major ? count * sizeof(int32_t) : count * sizeof(int64_t));
      const size_t own_at = layout.Add(constants == nullptr ? constant_bytes : 0);
      ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, x.memory, layout.size()));
      if (constants == nullptr) {  // another shape than the cached one, or too large to keep
        const std::vector<char> own = host_constants();
        ORTOPS_RETURN_IF_ERROR(run.CopyFromHostAndWait(run.Scratch(own_at), own.data(), own.size()));
        constants = run.Scratch(own_at);
      }
      const aclDataType type = AclTypeOf(x.type);
      ORTOPS_RETURN_IF_ERROR(
          AclOp(*run.acl, "MaxPool3DWithArgmaxV2")
              .Input(x.data, Bytes(x), type, in5, ACL_FORMAT_NCDHW)
              .Output(out, count * ElementSize(x.type), type, out5, ACL_FORMAT_NCDHW)
              .Output(run.Scratch(argmax_at), count * sizeof(int32_t), ACL_INT32, out5, ACL_FORMAT_NCDHW)
              .AttrInts("ksize", kernel)
              .AttrInts("strides", strides)
              .AttrInts("pads", {pads[0], pads[2], pads[4]})
              .AttrInts("dilation", {1, 1, 1})
              .AttrBool("ceil_mode", ceil_mode_ != 0)
              .AttrString("data_format", "NCDHW")
              .AttrInt("dtype", 3)
              .Run(run.stream));
      const int64_t per_plane = static_cast<int64_t>(count) / std::max<int64_t>(planes, 1);
      if (column_major) {
        const std::vector<int64_t> gathered{planes, per_plane};
        ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "GatherElementsV2")
                                   .Input(constants, constant_bytes, ACL_INT32, {planes, plane})
                                   .Input(run.Scratch(argmax_at), count * sizeof(int32_t), ACL_INT32, gathered)
                                   .Output(run.Scratch(wide_at), count * sizeof(int32_t), ACL_INT32, gathered)
                                   .AttrInt("dim", 1)
                                   .Run(run.stream));
        return run.Cast(run.Scratch(wide_at), ACL_INT32, indices, ACL_INT64, shape);
      }
      ORTOPS_RETURN_IF_ERROR(run.Cast(run.Scratch(argmax_at), ACL_INT32, run.Scratch(wide_at), ACL_INT64, shape));
      return AclOp(*run.acl, "Add")
          .Input(run.Scratch(wide_at), count * sizeof(int64_t), ACL_INT64, {planes, per_plane})
          .Input(constants, constant_bytes, ACL_INT64, {planes, 1})
          .Output(indices, count * sizeof(int64_t), ACL_INT64, {planes, per_plane})
          .Run(run.stream);
    });
  }

  // storage_order 0: each plane's offset (n * C + c) * D * H * W, int64 [planes]. 1: int32 [planes,
  // D * H * W] whose (q, d * H * W + h * W + w) is q * D * H * W + the column-major index
  // d + D * (h + H * w) (for the 1-D and 2-D pools this serves, D = 1: h + H * w).
  static std::vector<char> IndexConstants(const std::vector<int64_t>& in5, bool column_major) {
    const int64_t planes = in5[0] * in5[1], D = in5[2], H = in5[3], W = in5[4], plane = D * H * W;
    std::vector<char> bytes;
    if (!column_major) {
      bytes.resize(static_cast<size_t>(planes) * sizeof(int64_t));
      for (int64_t q = 0; q < planes; ++q) {
        const int64_t offset = q * plane;
        std::memcpy(bytes.data() + q * static_cast<int64_t>(sizeof(int64_t)), &offset, sizeof(int64_t));
      }
      return bytes;
    }
    bytes.resize(static_cast<size_t>(planes * plane) * sizeof(int32_t));
    char* at = bytes.data();
    for (int64_t q = 0; q < planes; ++q) {
      for (int64_t d = 0; d < D; ++d) {
        for (int64_t h = 0; h < H; ++h) {
          for (int64_t w = 0; w < W; ++w, at += sizeof(int32_t)) {
            const auto index = static_cast<int32_t>(q * plane + d + D * (h + H * w));
            std::memcpy(at, &index, sizeof(int32_t));
          }
        }
      }
    }
    return bytes;
  }

  // Index tables larger than this are copied every run instead of kept on the device.
  static constexpr size_t kMaxConstantBytes = size_t{64} << 20;

  int64_t storage_order_ = 0;
  mutable DeviceConstant index_constant_;  // the Indices' offsets or column-major table
};

class AveragePoolKernel : public PoolKernel {
 public:
  AveragePoolKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PoolKernel(info, op, status, /*max=*/false) {
    if (*status != nullptr) return;
    if ((*status = ReadIntAttribute(info, name(), "count_include_pad", 0, &count_include_pad_)) != nullptr) return;
    if (kernel_.size() != 2) return;
    const bool fits = kernel_[0] >= 1 && kernel_[1] >= 1 && kernel_[0] <= 255 && kernel_[1] <= 255 &&
                      kernel_[0] * kernel_[1] < 256 && strides_[0] >= 1 && strides_[1] >= 1 && strides_[0] <= 63 &&
                      strides_[1] <= 63;
    if (!fits) {
      *status = Fail("kernel_shape " + ShapeText(kernel_) + " / strides " + ShapeText(strides_) +
                     " exceed CANN AvgPoolV2's limits (kernel dims in [1, 255], area < 256, strides in [1, 63])");
    }
  }
  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    return Pool(
        context,
        [](const PoolKernel& self, AclOp& op) {
          op.AttrBool("exclusive", static_cast<const AveragePoolKernel&>(self).count_include_pad_ == 0);
        },
        count_include_pad_ != 0);
  }

 private:
  int64_t count_include_pad_ = 0;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16}) {
    list.Add("MaxPool", {In(t)}, {In(t), Optional(kI64)}, Make<MaxPoolKernel>);
    list.Add("AveragePool", {In(t)}, {In(t)}, Make<AveragePoolKernel>);
  }
  // Every MaxPool declares the optional Indices (ORT overloads an op only with one output count).
  for (ONNXTensorElementDataType t : {kU8, kI8}) {
    list.Add("MaxPool", {In(t)}, {In(t), Optional(kI64)}, Make<MaxPoolKernel>);
  }
}

}  // namespace ortops::placed::pool
