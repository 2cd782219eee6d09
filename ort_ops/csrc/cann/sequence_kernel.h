// The skeleton of every CANN kernel of the library: a run enqueues a sequence of CANN single ops on
// the session's stream.
//   SequenceRun   the run's ACL functions and stream (CannRun) and its device scratch: one lease
//                 (stream_scratch.h) laid out by a ScratchLayout, alive until the ops that use it
//                 have run on the stream (the concurrency rule), whatever the number of threads;
//   Float32Io<T>  the cast-wrap of kernels that compute in float32: float16/bfloat16 inputs are
//                 cast to float32 on the device, the results computed in float32 scratch and cast
//                 back to T once (CANN Cast: round to nearest even); float32 tensors are used as
//                 they are, with no launch.
// A kernel checks the CANN ops it will launch at creation (KernelAcl) and, per run:
//   ScratchLayout layout; ... layout.Add(bytes) ... io.Input(&layout, ...) ...
//   SequenceRun run;  Begin(context, name, &run);  run.Lease(context, scratch, memory, layout.size());
//   io.CastInputs(run);  run.Launch("Add", {F32(a, dims), HostConstant(&alpha, ACL_FLOAT)}, {F32(t, dims)});
//   ... (ops with attributes: run.Op("X").Tensors(...).AttrInt(...).Run(run.stream));  io.CastOutputs();
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "cann/acl_api.h"
#include "cann/acl_op.h"
#include "cann/acl_types.h"
#include "cann/cann_run.h"
#include "cann/stream_scratch.h"
#include "common/declared_op.h"
#include "common/ort_api.h"
#include "common/tensor_io.h"

namespace ortops::cann {

// At kernel creation: the ACL functions, and an error naming `kernel` and the SoC unless every op
// of `op_types` is available there (soc.h).
OrtStatusPtr KernelAcl(const char* kernel, std::initializer_list<const char*> op_types, const AclApi** acl);

// Byte offsets of one run's device buffers inside its scratch lease, each kScratchAlign aligned.
class ScratchLayout {
 public:
  // The offset of a new buffer of `bytes` bytes (0 bytes: no space, the offset of the next one).
  size_t Add(size_t bytes) {
    const size_t at = size_;
    size_ += ScratchAligned(bytes);
    return at;
  }
  size_t size() const { return size_; }

 private:
  size_t size_ = 0;
};

// One run of a CANN kernel: CannRun's ACL functions, stream and device helpers, plus its scratch.
class SequenceRun : public CannRun {
 public:
  SequenceRun() = default;
  SequenceRun(const SequenceRun&) = delete;
  SequenceRun& operator=(const SequenceRun&) = delete;

  // The ACL functions and the kernel context's stream; an error naming `op` if ACL is missing.
  static OrtStatusPtr Begin(OrtKernelContext* context, const char* op, SequenceRun* run) {
    return CannRun::Begin(context, op, run);
  }
  // At least `bytes` of device scratch (on `device`, the memory of the kernel's inputs) from
  // `user`, held until the ops this run enqueues have run; nothing for 0 bytes.
  OrtStatusPtr Lease(OrtKernelContext* context, ScratchUser& user, const OrtMemoryInfo* device, size_t bytes) {
    if (bytes == 0) return nullptr;
    return user.Acquire(context, device, *acl, stream, bytes, &lease_);
  }
  // The scratch buffer at `offset` (a ScratchLayout offset).
  char* Scratch(size_t offset) const { return lease_.data() + offset; }

  // A CANN single op to describe and then enqueue with .Run(stream).
  AclOp Op(const char* type) const { return AclOp(*acl, type); }
  // Enqueues op `type` (no attributes) on `inputs`, giving `outputs`.
  OrtStatusPtr Launch(const char* type, std::initializer_list<AclTensor> inputs,
                      std::initializer_list<AclTensor> outputs) const {
    return Op(type).Tensors(inputs, outputs).Run(stream);
  }
  // out (`to`, dims) = Cast(in (`from`, dims)).
  OrtStatusPtr Cast(const void* in, aclDataType from, void* out, aclDataType to,
                    const std::vector<int64_t>& dims) const;
  // out = x1 + alpha * x2, float32 tensors of `dims` (CANN Axpy).
  OrtStatusPtr Axpy(const void* x1, const void* x2, float alpha, void* out, const std::vector<int64_t>& dims) const;

 private:
  ScratchLease lease_;
};

// The cast-wrap of a kernel on tensors of T that computes in float32 (see the top of this file).
// Declare every tensor (adding its float32 copy to the run's layout), lease, CastInputs, compute on
// In(i) / Out(i), CastOutputs. The casts run in declaration order.
template <typename T>
class Float32Io {
 public:
  static constexpr bool kCasts = kAclType<T> != ACL_FLOAT;

  // Input `data` (T, `dims`); returns its index for In().
  size_t Input(ScratchLayout* layout, const void* data, std::vector<int64_t> dims) {
    return Declare(&inputs_, layout, const_cast<void*>(data), std::move(dims));
  }
  // Output `data` (T, `dims`); returns its index for Out().
  size_t Output(ScratchLayout* layout, void* data, std::vector<int64_t> dims) {
    return Declare(&outputs_, layout, data, std::move(dims));
  }
  // The inputs (In(0), In(1), ...) and the output (Out(0)) of an elementwise op, of io's shape.
  void Elementwise(ScratchLayout* layout, const ElementwiseIo& io) {
    for (const void* input : io.inputs) Input(layout, input, io.shape);
    Output(layout, io.output, io.shape);
  }
  // After run.Lease: enqueues the casts of the inputs to float32.
  OrtStatusPtr CastInputs(const SequenceRun& run) {
    run_ = &run;
    if (!kCasts) return nullptr;
    for (const Tensor& t : inputs_)
      ORTOPS_RETURN_IF_ERROR(run.Cast(t.data, kAclType<T>, Float32(t), ACL_FLOAT, t.dims));
    return nullptr;
  }
  // The float32 input `i` / the float32 buffer of output `i` (after CastInputs).
  const void* In(size_t i) const { return Float32(inputs_[i]); }
  void* Out(size_t i) const { return Float32(outputs_[i]); }
  // Enqueues the casts of the float32 results to the outputs' T (one rounding).
  OrtStatusPtr CastOutputs() const {
    if (!kCasts) return nullptr;
    for (const Tensor& t : outputs_)
      ORTOPS_RETURN_IF_ERROR(run_->Cast(Float32(t), ACL_FLOAT, t.data, kAclType<T>, t.dims));
    return nullptr;
  }

 private:
  struct Tensor {
    void* data;
    std::vector<int64_t> dims;
    size_t at;  // the float32 copy's scratch offset (float16/bfloat16)
  };
  static size_t Declare(std::vector<Tensor>* list, ScratchLayout* layout, void* data, std::vector<int64_t> dims) {
    const size_t at = layout->Add(kCasts ? AclBytes(ACL_FLOAT, dims) : 0);
    list->push_back(Tensor{data, std::move(dims), at});
    return list->size() - 1;
  }
  void* Float32(const Tensor& t) const { return kCasts ? run_->Scratch(t.at) : t.data; }

  std::vector<Tensor> inputs_, outputs_;
  const SequenceRun* run_ = nullptr;
};

// Init of a kernel that launches CANN op `op_type` in float32 on tensors of T (Float32Io): `op_type`,
// and Cast unless T is float32, must exist on the SoC.
template <typename T>
OrtStatusPtr Float32OpAcl(const char* kernel, const char* op_type) {
  const AclApi* acl = nullptr;
  if (Float32Io<T>::kCasts) return KernelAcl(kernel, {op_type, "Cast"}, &acl);
  return KernelAcl(kernel, {op_type}, &acl);
}

// The Run of an elementwise kernel computed in float32: `layout` holds the kernel's own scratch
// buffers (their offsets for run.Scratch), to which the float32 copies of io's tensors are added;
// after the lease and the casts in, `launch(f32)` enqueues the float32 ops from f32.In(i) to
// f32.Out(0); then the cast out to T.
template <typename T, typename Launch>
OrtStatusPtr RunInFloat32(OrtKernelContext* context, const ElementwiseIo& io, SequenceRun& run, ScratchUser& scratch,
                          ScratchLayout layout, const Launch& launch) {
  Float32Io<T> f32;
  f32.Elementwise(&layout, io);
  ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch, io.memory, layout.size()));
  ORTOPS_RETURN_IF_ERROR(f32.CastInputs(run));
  ORTOPS_RETURN_IF_ERROR(launch(static_cast<const Float32Io<T>&>(f32)));
  return f32.CastOutputs();
}

// The ComputeV2 of a CANN kernel of op `op`: `prepare(&io)` reads the inputs into an `Io` (with a
// `count` of elements); nothing for an empty tensor (CANN rejects empty tensors; the outputs are
// empty anyway), else `kernel.Run(context, io, run)` on a begun SequenceRun.
template <typename Io, typename K, typename Prepare>
OrtStatusPtr RunSequence(const K& kernel, OrtKernelContext* context, const char* op, const Prepare& prepare) {
  struct Begun {
    const K& kernel;
    const char* op;
    OrtStatusPtr Run(OrtKernelContext* c, const Io& io) const {
      SequenceRun run;
      ORTOPS_RETURN_IF_ERROR(SequenceRun::Begin(c, op, &run));
      return kernel.Run(c, io, run);
    }
  };
  return RunPrepared<Io>(Begun{kernel, op}, context, prepare);
}

// RunSequence of elementwise op Decl on element type T (its inputs of one shape).
template <typename Decl, typename T, typename K>
OrtStatusPtr RunElementwise(const K& kernel, OrtKernelContext* context) {
  return RunSequence<ElementwiseIo>(kernel, context, Decl::kName,
                                    [context](ElementwiseIo* io) { return PrepareDeclared<Decl, T>(context, io); });
}

// The skeleton of a CANN kernel of elementwise declared op Decl that is one CANN op, K::kCannOp,
// launched in float32 on tensors of T (the Float32Io cast-wrap). K derives from
// Float32OpKernel<Decl, T, K>, inherits its constructor and defines
//   static constexpr const char* kCannOp = "...";
//   OrtStatusPtr Launch(const SequenceRun& run, const ElementwiseIo& io, const Float32Io<T>& f32) const;
// which enqueues kCannOp from f32.In(i) to f32.Out(0) (io: the tensors of T, their shape).
template <typename Decl, typename T, typename K>
struct Float32OpKernel : WithAttributes<Decl> {
  using WithAttributes<Decl>::WithAttributes;
  mutable ScratchUser scratch;

  OrtStatusPtr Init() { return Float32OpAcl<T>(Decl::kName, K::kCannOp); }
  OrtStatusPtr ComputeV2(OrtKernelContext* context) const { return RunElementwise<Decl, T>(*this, context); }
  OrtStatusPtr Run(OrtKernelContext* context, const ElementwiseIo& io, SequenceRun& run) const {
    const K& kernel = static_cast<const K&>(*this);
    return RunInFloat32<T>(context, io, run, scratch, {},
                           [&](const Float32Io<T>& f32) { return kernel.Launch(run, io, f32); });
  }
};

}  // namespace ortops::cann
