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
// The scalars 0 and alpha are constant inputs (aclSetTensorConst): no host-to-device copy. Written
// on the CANN kernel skeleton (cann/sequence_kernel.h): the sequence route's casts are its
// Float32Io, the intermediates live in the run's scratch lease.
// Empty tensors launch nothing. ACL is loaded lazily (see acl_api.h).
#include <vector>

#include "cann/sequence_kernel.h"
#include "cann/soc.h"
#include "common/op_base.h"
#include "ops/elu_grad/elu_grad.h"

namespace ortops::elu_grad {
namespace {

using cann::AclApi;
using cann::Device;
using cann::F32;
using cann::Float32Io;
using cann::HostConstant;
using cann::kAclType;
using cann::Mask;
using cann::ScratchLayout;
using cann::SequenceRun;

enum class Route { kEluGrad, kEluGradV2, kSequence };

template <typename T>
struct CannKernel : WithAttributes<Def> {
  using WithAttributes<Def>::WithAttributes;
  const float zero = 0.0f;
  const typename T::Storage zero_t = 0;  // +0.0 in T
  Route route = Route::kSequence;
  mutable cann::ScratchUser scratch;

  // The first exact route this SoC has the CANN ops for.
  OrtStatusPtr Init() {
    const AclApi* acl = nullptr;
    ORTOPS_RETURN_IF_ERROR(cann::AclForKernel(Def::kName, &acl));
    if (attributes.alpha == 1.0f && cann::HasOps(*acl, {"EluGrad"})) {
      route = Route::kEluGrad;
    } else if (attributes.alpha >= 0.0f && cann::HasOps(*acl, {"EluGradV2", "Greater", "Select"})) {  // (its tiling
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

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const { return cann::RunElementwise<Def, T>(*this, context); }

  OrtStatusPtr Run(OrtKernelContext* context, const ElementwiseIo& io, SequenceRun& run) const {
    if (route == Route::kEluGrad) {
      const auto& shape = io.shape;
      constexpr aclDataType type = kAclType<T>;
      return run.Launch("EluGrad", {Device(io.inputs[0], type, shape), Device(io.inputs[1], type, shape)},
                        {Device(io.output, type, shape)});
    }
    if (route == Route::kEluGradV2) return WithEluGradV2(context, io, run);
    return WithAlpha(context, io, run);
  }

  OrtStatusPtr WithEluGradV2(OrtKernelContext* context, const ElementwiseIo& io, SequenceRun& run) const {
    constexpr aclDataType type = kAclType<T>;
    const size_t n = io.count;
    const size_t bytes = n * sizeof(typename T::Storage);
    // scratch: v | negative (the mask last: no padding after it)
    const size_t v_bytes = cann::ScratchAligned(bytes);
    ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch, io.memory, v_bytes + n));
    char* v = run.Scratch(0);
    char* negative = run.Scratch(v_bytes);
    const auto& shape = io.shape;
    const cann::AclTensor grads = Device(io.inputs[0], type, shape), activations = Device(io.inputs[1], type, shape);
    ORTOPS_RETURN_IF_ERROR(run.Op("EluGradV2")
                               .Tensors({grads, activations}, {Device(v, type, shape)})
                               .AttrFloat("alpha", attributes.alpha)
                               .AttrFloat("scale", 1.0f)
                               .AttrFloat("input_scale", 1.0f)
                               .AttrBool("is_result", true)
                               .Run(run.stream));
    ORTOPS_RETURN_IF_ERROR(run.Launch("Greater", {HostConstant(&zero_t, type), activations}, {Mask(negative, shape)}));
    return run.Launch("Select", {Mask(negative, shape), Device(v, type, shape), grads},
                      {Device(io.output, type, shape)});
  }

  OrtStatusPtr WithAlpha(OrtKernelContext* context, const ElementwiseIo& io, SequenceRun& run) const {
    const size_t n = io.count;
    const size_t f32_bytes = n * sizeof(float);
    const auto& shape = io.shape;
    // scratch: t | p | mask | [g32 | a32 | y32]
    ScratchLayout layout;
    const size_t at_t = layout.Add(f32_bytes), at_p = layout.Add(f32_bytes), at_mask = layout.Add(n);
    return cann::RunInFloat32<T>(context, io, run, scratch, layout, [&](const Float32Io<T>& f32) {
      char* t = run.Scratch(at_t);
      char* p = run.Scratch(at_p);
      char* mask = run.Scratch(at_mask);
      const void* g32 = f32.In(0);  // In(1) activations, Out(0) y
      const void* a32 = f32.In(1);
      ORTOPS_RETURN_IF_ERROR(
          run.Launch("Add", {F32(a32, shape), HostConstant(&attributes.alpha, ACL_FLOAT)}, {F32(t, shape)}));
      ORTOPS_RETURN_IF_ERROR(run.Launch("Mul", {F32(g32, shape), F32(t, shape)}, {F32(p, shape)}));
      ORTOPS_RETURN_IF_ERROR(
          run.Launch("Less", {F32(a32, shape), HostConstant(&zero, ACL_FLOAT)}, {Mask(mask, shape)}));
      return run.Launch("Select", {Mask(mask, shape), F32(p, shape), F32(g32, shape)}, {F32(f32.Out(0), shape)});
    });
  }
};

}  // namespace

void RegisterCann(OpList& list) { list.AddDeclared<Declaration, CannKernel>(); }

}  // namespace ortops::elu_grad
