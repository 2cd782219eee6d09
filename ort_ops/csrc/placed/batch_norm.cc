// BatchNormalization (ai.onnx 9+: X, scale, B, input_mean, input_var -> Y[, running_mean, running_var]; epsilon,
// momentum, training_mode) placed on CANN, channels at axis 1, X of any rank >= 2 described as 4-D NCHW
// [N, C, S, 1] (S: the product of X's dims after C; the statistics are per channel over N and S either way).
//
// Route "training" (opset 14/15 training_mode = 1): CANN BatchNormV3 (hicann/ops-nn norm/batch_norm_v3:
// op_graph/batch_norm_v3_proto.h, README.md; A2/A3 kernel op_kernel/batch_norm_v3_full_reduce.h) with momentum
// 1 - ONNX's momentum gives Y, the batch mean and ONNX's running_mean. Its running_var uses the *unbiased* batch
// variance (op_host/batch_norm_v3_full_reduce_tiling.cpp batchVarScale = M / (M - 1), M = N * S), where ONNX's
// uses the population one; with m = ONNX's momentum, CANN's is V' = m * v + (1 - m) * s * var (s = M / (M - 1))
// and ONNX's is m * v + (1 - m) * var = (V' + (s - 1) * m * v) / s: CANN Axpy (V' + alpha * v, alpha =
// m / (M - 1)) and Muls (* (M - 1) / M), in place in the running_var output. 1 launch, 3 with running_var read.
// M = 1 (BatchNormV3's running_var is NaN, 0 / 0) and M = 0 are refused.
//
// Route "inference" (training_mode = 0, opset 9+ with Y only): CANN BatchNorm (GE nn_batch_norm_ops.h
// REG_OP(BatchNorm), is_training false, data_format NCHW), its statistics outputs to scratch; 1 launch. For the
// ranks the CANN EP's own kernel gets wrong (2-D, 3-D, 5-D, ...): the placement rule leaves 4-D inference to it.
//
// Types: X float32 with float32 scale / B / statistics, X float16 with float16 or float32 scale / B and float32
// statistics (BatchNormV3's A2/A3 dtype rows, batch_norm_v3_def.cpp; BatchNorm's scale / offset / mean / variance
// are float32 only, so inference takes float32 scale / B).
#include <cstdint>
#include <string>
#include <vector>

#include "cann/sequence_kernel.h"
#include "placed/common/placed_op.h"
#include "placed/common/statistics_outputs.h"

namespace ortops::placed::batch_norm {
namespace {

const char* const kParamNames[] = {"X", "scale", "B", "input_mean", "input_var"};

// The route of a node: its training_mode attribute (absent before opset 14: inference).
const char* RouteOf(const OrtKernelInfo* info) {
  int64_t training = 0;
  OrtStatusPtr status = ReadIntAttribute(info, "BatchNormalization", "training_mode", 0, &training);
  if (status != nullptr) {
    Api().ReleaseStatus(status);  // the constructor reads it again and reports the error
    return "inference";
  }
  return training != 0 ? "training" : "inference";
}

class BatchNormKernel : public PlacedKernel {
 public:
  BatchNormKernel(const OrtKernelInfo* info, const DeclaredOp& op, OrtStatusPtr* status)
      : PlacedKernel(info, op, status, RouteOf(info)) {
    if (*status != nullptr) return;
    if ((*status = ReadFloatAttribute(info, name(), "epsilon", 1e-5f, &epsilon_)) != nullptr) return;
    if ((*status = ReadFloatAttribute(info, name(), "momentum", 0.9f, &momentum_)) != nullptr) return;
    int64_t training = 0;
    if ((*status = ReadIntAttribute(info, name(), "training_mode", 0, &training)) != nullptr) return;
    training_ = training != 0;
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    TensorView in[5];
    for (size_t i = 0; i < 5; ++i) ORTOPS_RETURN_IF_ERROR(Input(context, i, kParamNames[i], &in[i]));
    const TensorView& x = in[0];
    if (x.shape.size() < 2) return Fail("X of shape " + ShapeText(x.shape) + " has rank < 2 (expected [N, C, ...])");
    const int64_t channels = x.shape[1];
    const std::vector<int64_t> per_channel{channels};
    for (size_t i = 1; i < 5; ++i) {
      if (in[i].shape != per_channel)
        return Fail(std::string(kParamNames[i]) + " of shape " + ShapeText(in[i].shape) + " differs from [" +
                    std::to_string(channels) + "] (X's channels, axis 1)");
    }
    int64_t spatial = 1;
    for (size_t d = 2; d < x.shape.size(); ++d) spatial *= x.shape[d];
    const std::vector<int64_t> dims{x.shape[0], channels, spatial, 1};
    if (!training_) return Infer(context, in, dims);
    return Train(context, in, dims);
  }

 private:
  OrtStatusPtr Infer(OrtKernelContext* context, const TensorView (&in)[5], const std::vector<int64_t>& dims) const {
    for (size_t i = 1; i < 5; ++i) {
      if (in[i].type != kF32)
        return Fail(std::string(kParamNames[i]) +
                    " is not float32: CANN BatchNorm takes float32 scale, offset, mean and variance");
    }
    const TensorView& x = in[0];
    const size_t stat_bytes = static_cast<size_t>(dims[1]) * sizeof(float);
    return OnOutput(context, x.shape, [&](CannRun& begun, void* y) -> OrtStatusPtr {
      cann::SequenceRun run;
      static_cast<CannRun&>(run) = begun;
      cann::ScratchLayout layout;
      size_t at[4];
      for (size_t& a : at) a = layout.Add(stat_bytes);
      ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, x.memory, layout.size()));
      const aclDataType type = AclTypeOf(x.type);
      AclOp op(*run.acl, "BatchNorm");
      op.Input(x.data, Bytes(x), type, dims, ACL_FORMAT_NCHW);
      for (size_t i = 1; i < 5; ++i) op.Input(in[i].data, Bytes(in[i]), ACL_FLOAT, in[i].shape);
      op.Output(y, Bytes(x), type, dims, ACL_FORMAT_NCHW);
      for (size_t a : at) op.Output(run.Scratch(a), stat_bytes, ACL_FLOAT, {dims[1]});
      return op.AttrFloat("epsilon", epsilon_)
          .AttrString("data_format", "NCHW")
          .AttrBool("is_training", false)
          .Run(run.stream);
    });
  }

  OrtStatusPtr Train(OrtKernelContext* context, const TensorView (&in)[5], const std::vector<int64_t>& dims) const {
    const TensorView& x = in[0];
    const int64_t m = dims[0] * dims[2];
    if (m < 2)
      return Fail("X of shape " + ShapeText(x.shape) + " has " + std::to_string(m) +
                  " value(s) per channel: training mode needs at least 2 (CANN BatchNormV3's running variance is "
                  "NaN for 1, its unbiased estimate 0 / 0)");
    const std::vector<int64_t> per_channel{dims[1]};
    const size_t stat_bytes = static_cast<size_t>(dims[1]) * sizeof(float);
    StatisticsOutputs<2> running;  // running_mean, running_var
    ORTOPS_RETURN_IF_ERROR(running.Allocate(context, 1, per_channel));
    return OnOutput(context, x.shape, [&](CannRun& begun, void* y) -> OrtStatusPtr {
      cann::SequenceRun run;
      static_cast<CannRun&>(run) = begun;
      cann::ScratchLayout layout;
      running.Reserve(&layout);
      const size_t save_mean_at = layout.Add(stat_bytes), save_var_at = layout.Add(stat_bytes);
      ORTOPS_RETURN_IF_ERROR(run.Lease(context, scratch_, x.memory, layout.size()));
      void *mean = running.Data(run, 0), *var = running.Data(run, 1);
      const aclDataType type = AclTypeOf(x.type), param = AclTypeOf(in[1].type);
      ORTOPS_RETURN_IF_ERROR(AclOp(*run.acl, "BatchNormV3")
                                 .Input(x.data, Bytes(x), type, dims, ACL_FORMAT_NCHW)
                                 .Input(in[1].data, Bytes(in[1]), param, per_channel)
                                 .Input(in[2].data, Bytes(in[2]), param, per_channel)
                                 .Input(in[3].data, stat_bytes, ACL_FLOAT, per_channel)
                                 .Input(in[4].data, stat_bytes, ACL_FLOAT, per_channel)
                                 .Output(y, Bytes(x), type, dims, ACL_FORMAT_NCHW)
                                 .Output(mean, stat_bytes, ACL_FLOAT, per_channel)
                                 .Output(var, stat_bytes, ACL_FLOAT, per_channel)
                                 .Output(run.Scratch(save_mean_at), stat_bytes, ACL_FLOAT, per_channel)
                                 .Output(run.Scratch(save_var_at), stat_bytes, ACL_FLOAT, per_channel)
                                 .AttrFloat("epsilon", epsilon_)
                                 .AttrFloat("momentum", static_cast<float>(1.0 - static_cast<double>(momentum_)))
                                 .AttrBool("is_training", true)
                                 .Run(run.stream));
      if (!running.produced(1)) return nullptr;
      // CANN's running_var (unbiased) made ONNX's (population): (V' + m / (M - 1) * v) * (M - 1) / M.
      const double md = static_cast<double>(m);
      ORTOPS_RETURN_IF_ERROR(
          run.Axpy(var, in[4].data, static_cast<float>(static_cast<double>(momentum_) / (md - 1.0)), var, per_channel));
      return AclOp(*run.acl, "Muls")
          .Input(var, stat_bytes, ACL_FLOAT, per_channel)
          .Output(var, stat_bytes, ACL_FLOAT, per_channel)
          .AttrFloat("value", static_cast<float>((md - 1.0) / md))
          .Run(run.stream);
    });
  }

  float epsilon_ = 1e-5f;
  float momentum_ = 0.9f;
  bool training_ = false;
  mutable cann::ScratchUser scratch_;
};

}  // namespace

void RegisterCann(OpList& list) {
  const auto add = [&list](ONNXTensorElementDataType x, ONNXTensorElementDataType param) {
    list.Add("BatchNormalization", {In(x), In(param), In(param), In(kF32), In(kF32)},
             {In(x), Optional(kF32), Optional(kF32)}, Make<BatchNormKernel>);
  };
  add(kF32, kF32);
  add(kF16, kF16);
  add(kF16, kF32);
}

}  // namespace ortops::placed::batch_norm
