// EluGrad on the CANN EP, through CANN single ops on the session's stream. No CANN op computes it
// for every alpha (docs/cann_ops.md: EluGrad has no alpha; EluGradV2 takes the negative branch at
// a == 0), so the kernel picks, at session creation, the first exact route the SoC has:
//   "EluGrad"   (alpha == 1): CANN's EluGrad (fp32 math, strict <, select, one RNE cast);
//   "EluGradV2" (alpha >= 0) v = EluGradV2(g, a; alpha, is_result) = a <= 0 ? g * (a + alpha) : g
//               (fp32, one rounding); y = Select(Greater(0, a), v, g): the a == +-0 elements take
//               g, as the spec's strict < does, and the grads branch is a copy of g's bits
//               (EluGradV2's g * scale would quiet a signalling NaN); Greater(0, a) is a < 0, also on
//               SoCs without Less (310P) — 3 launches for every dtype;
//   "sequence"  [Cast g, a -> float32]; t = Add(a, [alpha]); p = Mul(g, t); m = Less(a, [0]);
//               y = Select(m, p, g); [Cast y -> T] (4 launches in float32, 7 for float16/bfloat16).
// Each is bit-identical to the reference (NaN rules included). A SoC with none of them fails the
// session naming the SoC and the missing ops (cann/soc.h).
// The scalars 0 and alpha are constant inputs (aclSetTensorConst): no host-to-device copy. The
// float32 intermediates live in per-stream scratch (stream_scratch.h), valid until the ops that
// use them have run, whatever the number of concurrent runs and streams.
// Empty tensors launch nothing. ACL is loaded lazily (see acl_api.h).
#include <string>

#include "cann/acl_api.h"
#include "cann/acl_op.h"
#include "cann/acl_types.h"
#include "cann/cann_run.h"
#include "cann/soc.h"
#include "cann/stream_scratch.h"
#include "common/op_base.h"
#include "ops/elu_grad/elu_grad.h"

namespace ortops::elu_grad {
namespace {

using cann::AclApi;
using cann::AclOp;
using cann::GetAcl;
using cann::kAclType;
using cann::ScratchLease;
using cann::ScratchUser;

enum class Route { kEluGrad, kEluGradV2, kSequence };

template <typename T>
struct CannKernel {
  explicit CannKernel(const Def::Attributes& attributes) : alpha(attributes.alpha) {}
  const float zero = 0.0f;
  const typename T::Storage zero_t = 0;  // +0.0 in T
  const float alpha;
  Route route = Route::kSequence;
  mutable ScratchUser scratch;

  // The first exact route this SoC has the CANN ops for.
  OrtStatusPtr Init() {
    const AclApi* acl = nullptr;
    ORTOPS_RETURN_IF_ERROR(cann::AclForKernel(Def::kName, &acl));
    if (alpha == 1.0f && cann::HasOps(*acl, {"EluGrad"})) {
      route = Route::kEluGrad;
    } else if (alpha >= 0.0f && cann::HasOps(*acl, {"EluGradV2", "Greater", "Select"})) {  // (its tiling
      // rejects is_result with a negative alpha; NaN fails the test too)
      route = Route::kEluGradV2;
    } else if (cann::HasOps(*acl, {"Less", "Add", "Mul", "Select", "Cast"})) {
      route = Route::kSequence;
    } else {
      // Name what the shortest route lacks.
      return cann::RequireOps(*acl, Def::kName, {"EluGradV2", "Greater", "Select", "Less", "Add", "Mul", "Cast"});
    }
    return nullptr;
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const {
    ElementwiseIo io;
    ORTOPS_RETURN_IF_ERROR(PrepareElementwise(context, Def::kName, Def::InputNames(), T::kOnnxType, &io));
    if (io.count == 0) return nullptr;  // CANN rejects empty tensors; the result is empty anyway
    std::string error;
    const AclApi* acl = GetAcl(&error);
    if (acl == nullptr) return MakeError("EluGrad on CANN: " + error, ORT_FAIL);
    void* stream = nullptr;
    ORTOPS_RETURN_IF_ERROR(Api().KernelContext_GetGPUComputeStream(context, &stream));
    const size_t bytes = io.count * sizeof(typename T::Storage);
    constexpr aclDataType type = kAclType<T>;
    if (route == Route::kEluGrad) {
      return AclOp(*acl, "EluGrad")
          .Input(io.inputs[0], bytes, type, io.shape)
          .Input(io.inputs[1], bytes, type, io.shape)
          .Output(io.output, bytes, type, io.shape)
          .Run(stream);
    }
    if (route == Route::kEluGradV2) return WithEluGradV2(context, *acl, stream, io);
    return WithAlpha(context, *acl, stream, io);
  }

  OrtStatusPtr WithEluGradV2(OrtKernelContext* context, const AclApi& acl, aclrtStream stream,
                             const ElementwiseIo& io) const {
    constexpr aclDataType type = kAclType<T>;
    const size_t n = io.count;
    const size_t bytes = n * sizeof(typename T::Storage);
    const size_t v_bytes = cann::ScratchAligned(bytes);
    ScratchLease lease;
    ORTOPS_RETURN_IF_ERROR(scratch.Acquire(context, io.memory, acl, stream, v_bytes + n, &lease));
    char* v = lease.data();
    char* negative = v + v_bytes;
    const auto& shape = io.shape;
    ORTOPS_RETURN_IF_ERROR(AclOp(acl, "EluGradV2")
                               .Input(io.inputs[0], bytes, type, shape)
                               .Input(io.inputs[1], bytes, type, shape)
                               .Output(v, bytes, type, shape)
                               .AttrFloat("alpha", alpha)
                               .AttrFloat("scale", 1.0f)
                               .AttrFloat("input_scale", 1.0f)
                               .AttrBool("is_result", true)
                               .Run(stream));
    ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Greater")
                               .ConstInput(&zero_t, sizeof zero_t, type, {1})
                               .Input(io.inputs[1], bytes, type, shape)
                               .Output(negative, n, ACL_BOOL, shape)
                               .Run(stream));
    return AclOp(acl, "Select")
        .Input(negative, n, ACL_BOOL, shape)
        .Input(v, bytes, type, shape)
        .Input(io.inputs[0], bytes, type, shape)
        .Output(io.output, bytes, type, shape)
        .Run(stream);
  }

  OrtStatusPtr WithAlpha(OrtKernelContext* context, const AclApi& acl, aclrtStream stream,
                         const ElementwiseIo& io) const {
    constexpr bool is_f32 = kAclType<T> == ACL_FLOAT;
    const size_t n = io.count;
    const size_t f32_bytes = n * sizeof(float);
    const auto& shape = io.shape;
    const std::vector<int64_t> one{1};
    // scratch: t | p | mask | [g32 | a32 | y32], each slot cann::kScratchAlign aligned
    const size_t slot = cann::ScratchAligned(f32_bytes);
    const size_t mask_bytes = cann::ScratchAligned(n);
    const size_t total = 2 * slot + mask_bytes + (is_f32 ? 0 : 3 * slot);
    ScratchLease lease;
    ORTOPS_RETURN_IF_ERROR(scratch.Acquire(context, io.memory, acl, stream, total, &lease));
    char* t = lease.data();
    char* p = t + slot;
    char* mask = p + slot;
    const void* grads = io.inputs[0];
    const void* activations = io.inputs[1];
    const void* g32 = grads;
    const void* a32 = activations;
    void* y32 = io.output;
    if (!is_f32) {
      char* extra = mask + mask_bytes;
      g32 = extra;
      a32 = extra + slot;
      y32 = extra + 2 * slot;
    }
    const size_t in_bytes = n * sizeof(typename T::Storage);
    if (!is_f32) {
      ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Cast")
                                 .Input(grads, in_bytes, kAclType<T>, shape)
                                 .Output(const_cast<void*>(g32), f32_bytes, ACL_FLOAT, shape)
                                 .AttrInt("dst_type", ACL_FLOAT)
                                 .Run(stream));
      ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Cast")
                                 .Input(activations, in_bytes, kAclType<T>, shape)
                                 .Output(const_cast<void*>(a32), f32_bytes, ACL_FLOAT, shape)
                                 .AttrInt("dst_type", ACL_FLOAT)
                                 .Run(stream));
    }
    ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Add")
                               .Input(a32, f32_bytes, ACL_FLOAT, shape)
                               .ConstInput(&alpha, sizeof(float), ACL_FLOAT, one)
                               .Output(t, f32_bytes, ACL_FLOAT, shape)
                               .Run(stream));
    ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Mul")
                               .Input(g32, f32_bytes, ACL_FLOAT, shape)
                               .Input(t, f32_bytes, ACL_FLOAT, shape)
                               .Output(p, f32_bytes, ACL_FLOAT, shape)
                               .Run(stream));
    ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Less")
                               .Input(a32, f32_bytes, ACL_FLOAT, shape)
                               .ConstInput(&zero, sizeof(float), ACL_FLOAT, one)
                               .Output(mask, n, ACL_BOOL, shape)
                               .Run(stream));
    ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Select")
                               .Input(mask, n, ACL_BOOL, shape)
                               .Input(p, f32_bytes, ACL_FLOAT, shape)
                               .Input(g32, f32_bytes, ACL_FLOAT, shape)
                               .Output(y32, f32_bytes, ACL_FLOAT, shape)
                               .Run(stream));
    if (!is_f32) {
      ORTOPS_RETURN_IF_ERROR(AclOp(acl, "Cast")
                                 .Input(y32, f32_bytes, ACL_FLOAT, shape)
                                 .Output(io.output, in_bytes, kAclType<T>, shape)
                                 .AttrInt("dst_type", kAclType<T>)
                                 .Run(stream));
    }
    return nullptr;
  }
};

}  // namespace

void RegisterCann(OpList& list) { list.AddDeclared<Declaration, CannKernel>(); }

}  // namespace ortops::elu_grad
