// Gemm placed on CANN: CANN MatMulV2 (x1, x2, bias; transpose_x1/transpose_x2 from transA/transB).
// alpha = beta = 1: a C of shape [N] or [1, N] is MatMulV2's bias; any other broadcastable C is
// added after the product with CANN Add (in place). Otherwise (route "scaled"; MatMulV2 has no
// scaling): the product, CANN Muls by alpha in place if alpha != 1, then CANN Axpy (y = x1 +
// alpha * x2, broadcasting x2) adding beta * C in place; beta = 0 ignores C, as ORT's CPU EP does
// (C's inf/NaN do not reach Y). K = 0: Y = beta * C (a copy or CANN BroadcastToD, then Muls by
// beta if beta != 1), or zeros without C or with beta = 0.
#include "placed/common/placed_op.h"

namespace ortops::placed::gemm {
namespace {

class GemmKernel : public PlacedKernel {
 public:
  GemmKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status) : PlacedKernel(info, op, status) {
    if (*status != nullptr) return;
    if ((*status = ReadFloatAttribute(info, name(), "alpha", 1.0f, &alpha_)) != nullptr) return;
    if ((*status = ReadFloatAttribute(info, name(), "beta", 1.0f, &beta_)) != nullptr) return;
    if ((*status = ReadIntAttribute(info, name(), "transA", 0, &trans_a_)) != nullptr) return;
    if ((*status = ReadIntAttribute(info, name(), "transB", 0, &trans_b_)) != nullptr) return;
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView a, b, c;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "A", &a));
    ORTOPS_RETURN_IF_ERROR(Input(context, 1, "B", &b));
    ORTOPS_RETURN_IF_ERROR(GetInput(context, 2, &c));
    if (a.shape.size() != 2 || b.shape.size() != 2) {
      return Fail("A " + ShapeText(a.shape) + " and B " + ShapeText(b.shape) + " must be 2-D");
    }
    const int64_t m = trans_a_ ? a.shape[1] : a.shape[0];
    const int64_t k = trans_a_ ? a.shape[0] : a.shape[1];
    const int64_t kb = trans_b_ ? b.shape[1] : b.shape[0];
    const int64_t n = trans_b_ ? b.shape[0] : b.shape[1];
    if (k != kb) {
      return Fail("A " + ShapeText(a.shape) + (trans_a_ ? " (transposed)" : "") + " and B " + ShapeText(b.shape) +
                  (trans_b_ ? " (transposed)" : "") + " do not multiply");
    }
    const std::vector<int64_t> shape{m, n};
    std::vector<int64_t> broadcast;
    if (c.present && (!BroadcastShapes(c.shape, shape, &broadcast) || broadcast != shape)) {
      return Fail("C " + ShapeText(c.shape) + " does not broadcast to the product's " + ShapeText(shape));
    }
    const bool scaled = alpha_ != 1.0f || beta_ != 1.0f;
    const bool as_bias =
        !scaled && c.present && c.count == static_cast<size_t>(n) && (c.shape.size() == 1 || c.shape[0] == 1);
    return OnOutput(context, shape, [&](CannRun& run, void* out) -> OrtStatusPtr {
      const aclDataType type = AclTypeOf(a.type);
      const size_t out_bytes = static_cast<size_t>(m * n) * ElementSize(a.type);
      if (k == 0) return EmptyProduct(run, type, c, shape, out, out_bytes);
      AclOp mm(*run.acl, "MatMulV2");
      mm.Input(a.data, Bytes(a), type, a.shape).Input(b.data, Bytes(b), type, b.shape);
      if (as_bias) {
        mm.Input(c.data, Bytes(c), type, {n});
      } else {
        mm.AbsentInput();
      }
      ORTOPS_RETURN_IF_ERROR(mm.Output(out, out_bytes, type, shape)
                                 .AttrBool("transpose_x1", trans_a_ != 0)
                                 .AttrBool("transpose_x2", trans_b_ != 0)
                                 .AttrInt("offset_x", 0)
                                 .Run(run.stream));
      if (scaled) return Scale(run, type, c, shape, out, out_bytes);
      if (!c.present || as_bias) return nullptr;
      // (rewrite.placement does not place such a Gemm where the SoC lacks Add)
      ORTOPS_RETURN_IF_ERROR(RequireRoute(*run.acl, "add_c"));
      return AclOp(*run.acl, "Add")
          .Input(out, out_bytes, type, shape)
          .Input(c.data, Bytes(c), type, c.shape)
          .Output(out, out_bytes, type, shape)
          .Run(run.stream);
    });
  }

 private:
  // Y (= A*B in `out`) scaled in place to alpha * Y + beta * C.
  OrtStatusPtr Scale(const CannRun& run, aclDataType type, const TensorView& c, const std::vector<int64_t>& shape,
                     void* out, size_t out_bytes) const {
    ORTOPS_RETURN_IF_ERROR(RequireRoute(*run.acl, "scaled"));
    if (alpha_ != 1.0f) ORTOPS_RETURN_IF_ERROR(Muls(run, type, out, out_bytes, shape, alpha_));
    if (!c.present || beta_ == 0.0f) return nullptr;
    return AclOp(*run.acl, "Axpy")
        .Input(out, out_bytes, type, shape)
        .Input(c.data, Bytes(c), type, c.shape)
        .Output(out, out_bytes, type, shape)
        .AttrFloat("alpha", beta_)
        .Run(run.stream);
  }

  OrtStatusPtr Muls(const CannRun& run, aclDataType type, void* data, size_t bytes, const std::vector<int64_t>& shape,
                    float value) const {
    return AclOp(*run.acl, "Muls")
        .Input(data, bytes, type, shape)
        .Output(data, bytes, type, shape)
        .AttrFloat("value", value)
        .Run(run.stream);
  }

  // K = 0: A*B is an empty sum, all zeros, so Y = beta * C broadcast to [M, N], or zeros without C
  // or with beta = 0; as the CPU EP gives, bit for bit (C's -0.0 and NaN payloads kept).
  OrtStatusPtr EmptyProduct(const CannRun& run, aclDataType type, const TensorView& c,
                            const std::vector<int64_t>& shape, void* out, size_t out_bytes) const {
    if (!c.present || beta_ == 0.0f) return run.ZeroOnDevice(out, out_bytes);
    if (c.shape == shape) {
      ORTOPS_RETURN_IF_ERROR(run.CopyOnDevice(out, c.data, out_bytes));
    } else {
      ORTOPS_RETURN_IF_ERROR(RequireRoute(*run.acl, "empty_k_broadcast_c"));
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "BroadcastToD")
                                 .Input(c.data, Bytes(c), type, c.shape)
                                 .Output(out, out_bytes, type, shape)
                                 .AttrInts("shape", shape)
                                 .Run(run.stream));
    }
    if (beta_ == 1.0f) return nullptr;
    ORTOPS_RETURN_IF_ERROR(RequireRoute(*run.acl, "scaled"));
    return Muls(run, type, out, out_bytes, shape, beta_);
  }

  float alpha_ = 1.0f, beta_ = 1.0f;
  int64_t trans_a_ = 0, trans_b_ = 0;
};

}  // namespace

void RegisterCann(OpList& list) {
  for (ONNXTensorElementDataType t : {kF32, kF16, kBF16}) {
    list.Add("Gemm", {In(t), In(t), Optional(t)}, {In(t)}, Make<GemmKernel>);
  }
}

}  // namespace ortops::placed::gemm
