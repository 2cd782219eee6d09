// Clip (opset >= 11: input, min?, max?) placed on CANN: one CANN ClipByValueV2 (x, clip_value_min,
// clip_value_max -> y; hicann/ops-math conversion/clip_by_value_v2) given the bounds as constant
// scalars. min and max are host inputs (ORT keeps them in CPU memory); an absent
// bound is ONNX's default, numeric_limits<T>::lowest() / max() (floats: -+the largest finite value,
// so an infinity becomes it, as on the CPU EP; the op runs without bounds too). ONNX sets every element to max when
// min > max. The README writes y = max(min(x, max), min) (min there), its kernels compute
// min(max(x, min), max) (max there): the kernel passes min' = max in that case, so both orders give
// ONNX's answer. An empty output launches nothing.
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "placed/common/placed_op.h"

namespace ortops::placed::clip {
namespace {

// One scalar of the element type, as its bytes.
struct Scalar {
  unsigned char bytes[8] = {};
};

template <typename V>
Scalar Of(V value) {
  Scalar s;
  std::memcpy(s.bytes, &value, sizeof value);
  return s;
}

template <typename V>
V As(const Scalar& s) {
  V value;
  std::memcpy(&value, s.bytes, sizeof value);
  return value;
}

// numeric_limits<T>::lowest() and max() of `type` (floats: the largest finite values).
void Extremes(ONNXTensorElementDataType type, Scalar* lowest, Scalar* highest) {
  switch (type) {
    case kF32:
      *lowest = Of(std::numeric_limits<float>::lowest());
      *highest = Of(std::numeric_limits<float>::max());
      return;
    case kF16:
      *lowest = Of(uint16_t{0xFBFF});  // -65504
      *highest = Of(uint16_t{0x7BFF});
      return;
    case kBF16:
      *lowest = Of(uint16_t{0xFF7F});  // -3.3895e38
      *highest = Of(uint16_t{0x7F7F});
      return;
    case kI8:
      *lowest = Of(std::numeric_limits<int8_t>::lowest());
      *highest = Of(std::numeric_limits<int8_t>::max());
      return;
    case kU8:
      *lowest = Of(std::numeric_limits<uint8_t>::lowest());
      *highest = Of(std::numeric_limits<uint8_t>::max());
      return;
    case kI32:
      *lowest = Of(std::numeric_limits<int32_t>::lowest());
      *highest = Of(std::numeric_limits<int32_t>::max());
      return;
    default:  // kI64, the last registered type
      *lowest = Of(std::numeric_limits<int64_t>::lowest());
      *highest = Of(std::numeric_limits<int64_t>::max());
      return;
  }
}

// a > b for scalars of `type` (false if either is NaN).
bool Greater(ONNXTensorElementDataType type, const Scalar& a, const Scalar& b) {
  switch (type) {
    case kF32: return As<float>(a) > As<float>(b);
    case kF16: return HalfToFloat(As<uint16_t>(a)) > HalfToFloat(As<uint16_t>(b));
    case kBF16: return BFloat16ToFloat(As<uint16_t>(a)) > BFloat16ToFloat(As<uint16_t>(b));
    case kI8: return As<int8_t>(a) > As<int8_t>(b);
    case kU8: return As<uint8_t>(a) > As<uint8_t>(b);
    case kI32: return As<int32_t>(a) > As<int32_t>(b);
    default: return As<int64_t>(a) > As<int64_t>(b);
  }
}

class ClipKernel : public PlacedKernel {
 public:
  using PlacedKernel::PlacedKernel;

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "input", &x));
    const size_t size = ElementSize(x.type);
    Scalar bounds[2];
    Extremes(x.type, &bounds[0], &bounds[1]);
    for (size_t i = 1; i <= 2; ++i) {
      TensorView bound;
      ORTOPS_RETURN_IF_ERROR(GetInput(context, i, &bound));
      if (!bound.present) continue;
      const char* what = i == 1 ? "min" : "max";
      if (bound.count != 1 || bound.shape.size() > 1) {
        return Fail(std::string(what) + " of shape " + ShapeText(bound.shape) + " is not a scalar");
      }
      if (bound.type != x.type) {
        return Fail(std::string(what) + " has dtype " + ElementTypeName(bound.type) + ", expected input's " +
                    ElementTypeName(x.type));
      }
      std::memcpy(bounds[i - 1].bytes, bound.data, size);
    }
    if (Greater(x.type, bounds[0], bounds[1])) bounds[0] = bounds[1];  // ONNX: min > max gives max
    return OnOutput(context, x.shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const aclDataType type = AclTypeOf(x.type);
      return AclOp(*run.acl, "ClipByValueV2")
          .Input(x.data, Bytes(x), type, x.shape)
          .ConstInput(bounds[0].bytes, size, type, {})
          .ConstInput(bounds[1].bytes, size, type, {})
          .Output(out, Bytes(x), type, x.shape)
          .Run(run.stream);
    });
  }
};

}  // namespace

// The types of CANN ClipByValueV2 (hicann/ops-math conversion/clip_by_value_v2/README.md) that the
// CPU EP's Clip has too.
void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16, kI8, kU8, kI32, kI64}) {
    const IoSpec bound{t, true, true};
    list.Add("Clip", {In(t), bound, bound}, {In(t)}, Make<ClipKernel>);
  }
}

}  // namespace ortops::placed::clip
