// LayerNormalization (opset 17: X, Scale, B? -> Y, Mean?, InvStdDev?; axis, epsilon, stash_type = 1) placed on
// CANN: one LayerNormV4 (x, normalized_shape = X's dims from axis as int32, gamma = Scale, beta = B) -> y, mean,
// rstd. CANN's mean and rstd are float32 and shaped [d0..d(axis-1), 1..1] for every x type, which is what ONNX's
// Mean and InvStdDev are with stash_type 1; where the node omits them, they go to the run's scratch. Scale and B
// must hold as many elements as the normalised dims (as the CPU EP requires); they are described with those dims.
// Atlas inference (ascend310p) has LayerNormV4 for float16 x only (hicann/ops-nn norm/layer_norm_v4/op_host/
// layer_norm_v4_def.cpp, config310P): other types fail the session there.
#include <string>
#include <utility>
#include <vector>

#include "cann/sequence_kernel.h"
#include "placed/common/placed_op.h"
#include "placed/common/statistics_outputs.h"

namespace ortops::placed::layer_norm {
namespace {

// One LayerNormV4 of x (`x_dims`) over its trailing dims `normalized`: gamma and beta (`param_dims`) given or
// null (absent: 1 and 0), y of x's type, mean and rstd float32 of shape `stats`.
OrtStatusPtr LaunchLayerNormV4(const CannRun& run, const TensorView& x, const std::vector<int64_t>& x_dims,
                               const std::vector<int32_t>& normalized, const TensorView* gamma, const TensorView* beta,
                               const std::vector<int64_t>& param_dims, float epsilon, void* y, void* mean, void* rstd,
                               const std::vector<int64_t>& stats) {
  const aclDataType type = AclTypeOf(x.type);
  const size_t stats_bytes = ElementCount(stats) * sizeof(float);
  AclOp op(*run.acl, "LayerNormV4");
  op.Input(x.data, Bytes(x), type, x_dims)
      .ConstInput(normalized.data(), normalized.size() * sizeof(int32_t), ACL_INT32,
                  {static_cast<int64_t>(normalized.size())});
  for (const TensorView* param : {gamma, beta}) {
    if (param != nullptr) {
      op.Input(param->data, Bytes(*param), type, param_dims);
    } else {
      op.AbsentInput();
    }
  }
  return op.Output(y, Bytes(x), type, x_dims)
      .Output(mean, stats_bytes, ACL_FLOAT, stats)
      .Output(rstd, stats_bytes, ACL_FLOAT, stats)
      .AttrFloat("epsilon", epsilon)
      .Run(run.stream);
}

// Why the SoC's LayerNormV4 cannot take x of `type` ("" if it can): Atlas inference (ascend310p) has it for
// float16 x only (hicann/ops-nn norm/layer_norm_v4/op_host/layer_norm_v4_def.cpp, config310P).
std::string LayerNormV4TypeProblem(const cann::AclApi& acl, ONNXTensorElementDataType type) {
  if (type == kF16 || std::string(cann::SocFamily(cann::SocName(acl))) != "ascend310p") return "";
  return "CANN LayerNormV4 on " + cann::SocName(acl) +
         " (Atlas inference series) takes float16 input only (layer_norm_v4_def.cpp config310P)";
}

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
    const std::string problem = LayerNormV4TypeProblem(*acl_, kType);
    if (!problem.empty()) *status = Fail(problem);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, scale, bias;
    ORTOPS_RETURN_IF_ERROR(WeightedInputs(context, "Scale", &x, &scale, &bias));
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
    return OnOutput(context, x.shape, [&](CannRun& begun, void* y) -> OrtStatusPtr {
      cann::SequenceRun run;
      static_cast<CannRun&>(run) = begun;
      cann::ScratchLayout layout;
      mean_inv_std.Reserve(&layout);
      ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, x.memory, layout.size()));
      return LaunchLayerNormV4(run, x, x.shape, normalized, &scale, bias.present ? &bias : nullptr, normalized_dims,
                               epsilon_, y, mean_inv_std.Data(run, 0), mean_inv_std.Data(run, 1), stats);
    });
  }

 private:
  int64_t axis_ = -1;
  float epsilon_ = 1e-5f;
  mutable cann::ScratchUser scratch_;
};

// InstanceNormalization (X [N, C, D1, ...], scale [C], B [C]; epsilon 1e-5): LayerNormV4 of X seen as [N, C, S]
// (S = D1 * ...) over its last dim, without gamma and beta, then Mul by scale and Add of B, both as [C, 1]
// (3 launches; CANN's GroupNorm, which takes per-channel gamma and beta, is Ascend 950 only: hicann/ops-nn
// norm/group_norm/README.md). Each step rounds to X's type.
template <ONNXTensorElementDataType kType>
class InstanceNormKernel : public PlacedKernel {
 public:
  InstanceNormKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status) {
    if (*status != nullptr) return;
    if ((*status = ReadFloatAttribute(info, name(), "epsilon", 1e-5f, &epsilon_)) != nullptr) return;
    const std::string problem = LayerNormV4TypeProblem(*acl_, kType);
    if (!problem.empty()) *status = Fail(problem);
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView x, scale, bias;
    ORTOPS_RETURN_IF_ERROR(Input(context, 0, "input", &x));
    ORTOPS_RETURN_IF_ERROR(Input(context, 1, "scale", &scale));
    ORTOPS_RETURN_IF_ERROR(Input(context, 2, "B", &bias));
    if (x.shape.size() < 3) {
      return Fail("input of shape " + ShapeText(x.shape) + " has rank " + std::to_string(x.shape.size()) +
                  ", expected at least 3 (N, C, D1, ...)");
    }
    const int64_t n = x.shape[0], c = x.shape[1];
    const int64_t spatial = ElementCount(std::vector<int64_t>(x.shape.begin() + 2, x.shape.end()));
    for (const auto& [param, what] : {std::pair{&scale, "scale"}, std::pair{&bias, "B"}}) {
      if (param->shape != std::vector<int64_t>{c}) {
        return Fail(std::string(what) + " has shape " + ShapeText(param->shape) + ", expected [" + std::to_string(c) +
                    "] (input's channels)");
      }
    }
    if (spatial == 0 && x.count == 0 && n * c > 0) {
      return Fail("input of shape " + ShapeText(x.shape) + " has no element to normalise per channel");
    }
    if (spatial > INT32_MAX) return Fail("input of shape " + ShapeText(x.shape) + " has spatial dims beyond int32");
    const std::vector<int64_t> view{n, c, spatial}, stats{n, c, 1}, per_channel{c, 1};
    const std::vector<int32_t> normalized{static_cast<int32_t>(spatial)};
    return OnOutput(context, x.shape, [&](CannRun& begun, void* y) -> OrtStatusPtr {
      cann::SequenceRun run;
      static_cast<CannRun&>(run) = begun;
      cann::ScratchLayout layout;
      const size_t stats_bytes = ElementCount(stats) * sizeof(float);
      const size_t normed_at = layout.Add(Bytes(x)), scaled_at = layout.Add(Bytes(x));
      const size_t mean_at = layout.Add(stats_bytes), rstd_at = layout.Add(stats_bytes);
      ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, x.memory, layout.size()));
      void* normed = run.Scratch(normed_at);
      void* scaled = run.Scratch(scaled_at);
      ORTOPS_RETURN_IF_ERROR(LaunchLayerNormV4(run, x, view, normalized, nullptr, nullptr, {}, epsilon_, normed,
                                               run.Scratch(mean_at), run.Scratch(rstd_at), stats));
      const aclDataType type = AclTypeOf(x.type);
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "Mul")
                                 .Input(normed, Bytes(x), type, view)
                                 .Input(scale.data, Bytes(scale), type, per_channel)
                                 .Output(scaled, Bytes(x), type, view)
                                 .Run(run.stream));
      return AclOp(*run.acl, "Add")
          .Input(scaled, Bytes(x), type, view)
          .Input(bias.data, Bytes(bias), type, per_channel)
          .Output(y, Bytes(x), type, view)
          .Run(run.stream);
    });
  }

 private:
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
  list.Add("InstanceNormalization", {In(kF32), In(kF32), In(kF32)}, {In(kF32)}, Make<InstanceNormKernel<kF32>>);
  list.Add("InstanceNormalization", {In(kF16), In(kF16), In(kF16)}, {In(kF16)}, Make<InstanceNormKernel<kF16>>);
  list.Add("InstanceNormalization", {In(kBF16), In(kBF16), In(kBF16)}, {In(kBF16)}, Make<InstanceNormKernel<kBF16>>);
}

}  // namespace ortops::placed::layer_norm
