// LayerNormalization (opset 17: X, Scale, B? -> Y, Mean?, InvStdDev?; axis, epsilon, stash_type = 1) placed on
// CANN: one LayerNormV4 (x, normalized_shape = X's dims from axis as int32, gamma = Scale, beta = B) -> y, mean,
// rstd. CANN's mean and rstd are float32 and shaped [d0..d(axis-1), 1..1] for every x type, which is what ONNX's
// Mean and InvStdDev are with stash_type 1; where the node omits them, they go to the run's scratch. Scale and B
// must hold as many elements as the normalised dims (as the CPU EP requires); they are described with those dims.
// Atlas inference (ascend310p) has LayerNormV4 for float16 x only (hicann/ops-nn norm/layer_norm_v4/op_host/
// layer_norm_v4_def.cpp, config310P): other types fail the session there.
#include <string>

#include "cann/sequence_kernel.h"
#include "placed/common/placed_op.h"
#include "placed/common/statistics_outputs.h"

namespace ortops::placed::layer_norm {
namespace {

template <ONNXTensorElementDataType kType>
class LayerNormKernel : public PlacedKernel {
 public:
  LayerNormKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status) {
    if (*status != nullptr) return;
    if ((*status = ReadIntAttribute(info, name(), "axis", -1, &axis_)) != nullptr) return;
    if ((*status = ReadFloatAttribute(info, name(), "epsilon", 1e-5f, &epsilon_)) != nullptr) return;
    int64_t stash = 1;
    if ((*status = ReadIntAttribute(info, name(), "stash_type", 1, &stash)) != nullptr) return;
    if (stash != 1) {
      *status =
          Fail("stash_type " + std::to_string(stash) + " is not supported (CANN LayerNormV4 computes in float32)");
      return;
    }
    if (kType != kF16 && std::string(cann::SocFamily(cann::SocName(*acl_))) == "ascend310p") {
      *status = Fail("CANN LayerNormV4 on " + cann::SocName(*acl_) +
                     " (Atlas inference series) takes float16 input only (layer_norm_v4_def.cpp config310P)");
    }
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, scale, bias;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "X", &x));
    ORTOPS_RETURN_IF_ERROR(Input(context, 1, "Scale", &scale));
    ORTOPS_RETURN_IF_ERROR(GetInput(context, 2, &bias));
    const size_t rank = x.shape.size();
    int64_t axis = 0;
    ORTOPS_RETURN_IF_ERROR(AxisOf(axis_, x, "X", &axis));
    std::vector<int32_t> normalized;
    std::vector<int64_t> normalized_dims, stats;
    size_t norm_size = 1;
    for (size_t d = 0; d < rank; ++d) {
      if (static_cast<int64_t>(d) < axis) {
        stats.push_back(x.shape[d]);
        continue;
      }
      if (x.shape[d] > INT32_MAX) return Fail("X of shape " + ShapeText(x.shape) + " has a dim beyond int32");
      normalized.push_back(static_cast<int32_t>(x.shape[d]));
      normalized_dims.push_back(x.shape[d]);
      stats.push_back(1);
      norm_size *= static_cast<size_t>(x.shape[d]);
    }
    if (norm_size == 0 && x.count == 0 && ElementCount(stats) > 0) {
      return Fail("X of shape " + ShapeText(x.shape) + " has no element to normalise over axes from " +
                  std::to_string(axis) + " (expected non-empty normalised dims)");
    }
    if (scale.count != norm_size) {
      return Fail("Scale of shape " + ShapeText(scale.shape) + " has " + std::to_string(scale.count) +
                  " elements, expected " + std::to_string(norm_size) + " (X's dims from axis " + std::to_string(axis) +
                  ": " + ShapeText(normalized_dims) + ")");
    }
    if (bias.present && bias.count != norm_size) {
      return Fail("B of shape " + ShapeText(bias.shape) + " has " + std::to_string(bias.count) +
                  " elements, expected " + std::to_string(norm_size));
    }
    StatisticsOutputs<2> mean_inv_std;  // Mean, InvStdDev
    ORTOPS_RETURN_IF_ERROR(mean_inv_std.Allocate(context, 1, stats));
    const size_t stats_bytes = mean_inv_std.bytes();
    return OnOutput(context, x.shape, [&](CannRun& begun, void* y) -> OrtStatusPtr {
      cann::SequenceRun run;
      static_cast<CannRun&>(run) = begun;
      cann::ScratchLayout layout;
      mean_inv_std.Reserve(&layout);
      ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, x.memory, layout.size()));
      const aclDataType type = AclTypeOf(x.type);
      AclOp op(*run.acl, "LayerNormV4");
      op.Input(x.data, Bytes(x), type, x.shape)
          .ConstInput(normalized.data(), normalized.size() * sizeof(int32_t), ACL_INT32,
                      {static_cast<int64_t>(normalized.size())})
          .Input(scale.data, Bytes(scale), type, normalized_dims);
      if (bias.present) {
        op.Input(bias.data, Bytes(bias), type, normalized_dims);
      } else {
        op.AbsentInput();
      }
      return op.Output(y, Bytes(x), type, x.shape)
          .Output(mean_inv_std.Data(run, 0), stats_bytes, ACL_FLOAT, stats)
          .Output(mean_inv_std.Data(run, 1), stats_bytes, ACL_FLOAT, stats)
          .AttrFloat("epsilon", epsilon_)
          .Run(run.stream);
    });
  }

 private:
  int64_t axis_ = -1;
  float epsilon_ = 1e-5f;
  mutable cann::ScratchUser scratch_;
};

}  // namespace

void RegisterCann(OpList& list) {
  list.Add("LayerNormalization", {In(kF32), In(kF32), Optional(kF32)}, {In(kF32), Optional(kF32), Optional(kF32)},
           Make<LayerNormKernel<kF32>>);
  list.Add("LayerNormalization", {In(kF16), In(kF16), Optional(kF16)}, {In(kF16), Optional(kF32), Optional(kF32)},
           Make<LayerNormKernel<kF16>>);
  list.Add("LayerNormalization", {In(kBF16), In(kBF16), Optional(kBF16)}, {In(kBF16), Optional(kF32), Optional(kF32)},
           Make<LayerNormKernel<kBF16>>);
}

}  // namespace ortops::placed::layer_norm
