// Dropout (opset 12, 13: data, ratio?, training_mode? -> output, mask?; seed?) placed on CANN.
//
// Training mode (training_mode true, ratio > 0): CANN DropOutGenMask (GE random_ops.h: shape, prob =
// the keep probability 1 - ratio, attributes seed / seed2 -> a uint8 bit mask of align(n, 128) / 8
// bytes) then DropOutDoMask (hicann/ops-math random/drop_out_do_mask: y = bit ? x * (1 / keep_prob) :
// 0): 2 launches. Where the node produces the ONNX mask (bool, x's shape), 2 more: the bit mask is
// applied to a buffer of float16 0x3C3C (1.0586, set with aclrtMemsetAsync: no launch) with keep_prob 1
// (DropOutDoMask: non-zero where kept, 0 where dropped) and CANN Cast to bool (x != 0): 4 launches.
// The random stream: seed is the node's seed attribute (else a random value drawn when the kernel is
// created) and seed2 a per-kernel atomic counter (1, 2, ...), so each run has its own stream, runs
// from several threads never share one, nothing is copied to the device for it (both are
// attributes), and two sessions of one seed attribute draw the same masks run by run. The masks are
// CANN's generator's (the simulator's own on the simulator), not the CPU EP's.
// ratio (float16 / float32 / double) and training_mode (bool) are host inputs (ORT keeps them in CPU
// memory); ratio defaults to 0.5 and must be in [0, 1) (ONNX Dropout-13; the CPU EP refuses the
// rest too). training_mode false or absent, or ratio 0: output = data (a device-to-device copy),
// mask all true (aclrtMemsetAsync): no launch. float16 numerics: DropOutDoMask's keep_prob is x's
// type, so y = half(x * half(1 / half(1 - ratio))); bfloat16: y = bf16(x * (1 / bf16(1 - ratio))) in
// float32 (the keep probability of DropOutGenMask is the float32 1 - ratio). bfloat16 data: Atlas
// A2/A3 and Ascend 950 only (DropOutDoMask's prototype): the kernel fails at creation on other SoCs.
// An empty data tensor launches nothing.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cann/sequence_kernel.h"
#include "placed/common/placed_op.h"

namespace ortops::placed::dropout {
namespace {

constexpr const char* kMaskRoute = "mask";

// The ONNX seed attribute: *has is false when the node has none.
OrtStatusPtr ReadSeed(const OrtKernelInfo* info, const char* op, int64_t* seed, bool* has) {
  int64_t a = 0, b = 0;
  ORTOPS_RETURN_IF_ERROR(ReadIntAttribute(info, op, "seed", 0, &a));
  ORTOPS_RETURN_IF_ERROR(ReadIntAttribute(info, op, "seed", 1, &b));
  *has = a == b;  // an absent attribute gives each fallback
  *seed = a;
  return nullptr;
}

// The route of the node: "mask" when it names output 1 (the ONNX mask), else the default.
const char* RouteOf(const OrtKernelInfo* info) {
  size_t outputs = 0, size = 0;
  OrtStatusPtr status = Api().KernelInfo_GetOutputCount(info, &outputs);
  if (status == nullptr && outputs > 1) status = Api().KernelInfo_GetOutputName(info, 1, nullptr, &size);
  if (status != nullptr) {
    Api().ReleaseStatus(status);  // the name is read again when the output is allocated
    return kDefaultRoute;
  }
  return outputs > 1 && size > 1 ? kMaskRoute : kDefaultRoute;  // size counts the terminating null
}

// The element type of the node's input 0 (data).
OrtStatusPtr InputType(const OrtKernelInfo* info, ONNXTensorElementDataType* type) {
  OrtTypeInfo* type_info = nullptr;
  ORTOPS_RETURN_IF_ERROR(Api().KernelInfo_GetInputTypeInfo(info, 0, &type_info));
  const OrtTensorTypeAndShapeInfo* tensor = nullptr;
  OrtStatusPtr status = Api().CastTypeInfoToTensorInfo(type_info, &tensor);
  if (status == nullptr) status = Api().GetTensorElementType(tensor, type);
  Api().ReleaseTypeInfo(type_info);
  return status;
}

// The float value of a host scalar of ratio's types.
double HostScalar(const TensorView& v) {
  if (v.type == kF16) {
    uint16_t h = 0;
    std::memcpy(&h, v.data, sizeof h);
    return HalfToFloat(h);
  }
  if (v.type == kF64) {
    double d = 0;
    std::memcpy(&d, v.data, sizeof d);
    return d;
  }
  float f = 0;
  std::memcpy(&f, v.data, sizeof f);
  return f;
}

class DropoutKernel : public PlacedKernel {
 public:
  DropoutKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status, RouteOf(info)) {
    if (*status != nullptr) return;
    bool has_seed = false;
    if ((*status = ReadSeed(info, name(), &seed_, &has_seed)) != nullptr) return;
    if (!has_seed) {
      std::random_device device;
      seed_ = static_cast<int64_t>(((static_cast<uint64_t>(device()) << 32) | device()) >> 1);
    }
    ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    if ((*status = InputType(info, &type)) != nullptr) return;
    const std::string family = cann::SocFamily(cann::SocName(*acl_));
    if (type == kBF16 && family != "ascend910b" && family != "ascend910_93" && family != "ascend950") {
      *status =
          Fail("data is bfloat16, which CANN DropOutDoMask takes on Atlas A2/A3 and Ascend 950 only, not on " +
               cann::SocName(*acl_) + " (hicann/ops-math random/drop_out_do_mask/op_graph/drop_out_do_mask_proto.h)");
    }
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, ratio_in, training_in;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "data", &x));
    ORTOPS_RETURN_IF_ERROR(GetInput(context, 1, &ratio_in));
    ORTOPS_RETURN_IF_ERROR(GetInput(context, 2, &training_in));
    double ratio = 0.5;
    if (ratio_in.present) {
      if (ratio_in.count != 1) return Fail("ratio of shape " + ShapeText(ratio_in.shape) + " is not a scalar");
      ratio = HostScalar(ratio_in);
    }
    if (!(ratio >= 0.0 && ratio < 1.0)) {
      return Fail("ratio is " + std::to_string(ratio) + ", expected a value in [0, 1) (ONNX Dropout)");
    }
    bool training = false;
    if (training_in.present) {
      if (training_in.count != 1) {
        return Fail("training_mode of shape " + ShapeText(training_in.shape) + " is not a scalar");
      }
      training = *static_cast<const unsigned char*>(training_in.data) != 0;
    }
    void* mask = nullptr;
    bool has_mask = false;
    ORTOPS_RETURN_IF_ERROR(AllocateOptionalOutput(context, 1, x.shape, &mask, &has_mask));
    const bool drop = training && ratio > 0.0;
    return OnOutput(context, x.shape, [&](CannRun& begun, void* y) -> OrtStatusPtr {
      if (!drop) {  // ONNX: a copy of the input, the mask all true
        ORTOPS_RETURN_IF_ERROR(begun.CopyOnDevice(y, x.data, Bytes(x)));
        return has_mask ? FillOnDevice(begun, {1}, kBool, x.shape, mask) : nullptr;
      }
      if (has_mask && std::strcmp(Launch(2), "Cast") != 0) {
        return Fail("the mask output needs the kernel's '" + std::string(kMaskRoute) + "' route");
      }
      cann::SequenceRun run;
      static_cast<CannRun&>(run) = begun;
      const auto count = static_cast<int64_t>(x.count);
      const int64_t bit_bytes = (count + 127) / 128 * 16;
      const std::vector<int64_t> flat{count};
      cann::ScratchLayout layout;
      const size_t bits_at = layout.Add(static_cast<size_t>(bit_bytes));
      const size_t ones_at = layout.Add(has_mask ? x.count * sizeof(uint16_t) : 0);
      const size_t kept_at = layout.Add(has_mask ? x.count * sizeof(uint16_t) : 0);
      ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, x.memory, layout.size()));
      void* bits = run.Scratch(bits_at);
      const float keep32 = static_cast<float>(1.0 - ratio);
      const int64_t seed2 = counter_.fetch_add(1, std::memory_order_relaxed) + 1;
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "DropOutGenMask")
                                 .ConstInput(flat.data(), sizeof(int64_t), ACL_INT64, {1})
                                 .ConstInput(&keep32, sizeof keep32, ACL_FLOAT, {})
                                 .Output(bits, static_cast<size_t>(bit_bytes), ACL_UINT8, {bit_bytes})
                                 .AttrInt("seed", seed_)
                                 .AttrInt("seed2", seed2)
                                 .Run(run.stream));
      const aclDataType type = AclTypeOf(x.type);
      const uint16_t keep16 = x.type == kBF16 ? FloatToBFloat16(keep32) : FloatToHalf(keep32);
      const void* keep = x.type == kF32 ? static_cast<const void*>(&keep32) : &keep16;
      ORTOPS_RETURN_IF_ERROR(DoMask(run, x.data, type, keep, bits, bit_bytes, x.shape, y));
      if (!has_mask) return nullptr;
      void* ones = run.Scratch(ones_at);
      void* kept = run.Scratch(kept_at);
      ORTOPS_RETURN_IF_ERROR(FillOnDevice(run, {0x3C, 0x3C}, kF16, x.shape, ones));  // 1.0586 (memset)
      const uint16_t one = FloatToHalf(1.0f);
      ORTOPS_RETURN_IF_ERROR(DoMask(run, ones, ACL_FLOAT16, &one, bits, bit_bytes, x.shape, kept));
      return run.Cast(kept, ACL_FLOAT16, mask, ACL_BOOL, x.shape);
    });
  }

 private:
  // y = DropOutDoMask(x, bits, keep_prob) for x of `type` and `shape` (keep: one host element of it).
  static OrtStatusPtr DoMask(const CannRun& run, const void* x, aclDataType type, const void* keep, void* bits,
                             int64_t bit_bytes, const std::vector<int64_t>& shape, void* y) {
    const size_t bytes = ElementCount(shape) * (type == ACL_FLOAT ? sizeof(float) : sizeof(uint16_t));
    const size_t keep_bytes = type == ACL_FLOAT ? sizeof(float) : sizeof(uint16_t);
    return AclOp(*run.acl, "DropOutDoMask")
        .Input(x, bytes, type, shape)
        .Input(bits, static_cast<size_t>(bit_bytes), ACL_UINT8, {bit_bytes})
        .ConstInput(keep, keep_bytes, type, {1})
        .Output(y, bytes, type, shape)
        .Run(run.stream);
  }

  int64_t seed_ = 0;
  mutable std::atomic<int64_t> counter_{0};
  mutable cann::ScratchUser scratch_;
};

}  // namespace

// data float32 / float16 / bfloat16 (DropOutDoMask's types; bfloat16 on Atlas A2/A3 and Ascend 950
// only: the kernel fails at creation elsewhere); ratio float16 / float32 / double, training_mode bool:
// host inputs.
void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16}) {
    for (ONNXTensorElementDataType r : {kF32, kF16, kF64}) {
      list.Add("Dropout", {In(t), IoSpec{r, true, true}, IoSpec{kBool, true, true}}, {In(t), Optional(kBool)},
               Make<DropoutKernel>);
    }
  }
}

}  // namespace ortops::placed::dropout
