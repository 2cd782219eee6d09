// SoftmaxCrossEntropyLossAndGrad on the CANN EP: CANN single ops on the session's stream, all in
// float32, every intermediate in device memory (per-stream scratch, cann/stream_scratch.h); target
// is in host memory (declared `host`), range-checked there and copied to the scratch (below). Two
// routes, chosen when the kernel is created:
//
// Class-index route, on Atlas A2/A3 (whose CrossEntropyLoss/CrossEntropyLossGrad kernels the
// simulator models; hicann/ops-nn@e5c3fa93 loss/cross_entropy_loss*/, docs/cann_ops.md), and only
// for C <= 2^24 (the gradient compares target with ignore_index in float32, exact below 2^24) and
// label_smoothing 0 (the A2/A3 gradient kernel implements no other value), with or without class
// weights w (input 3: CANN's ops take them as their `weight` input, [C] float32):
//   [x = Cast(logits, float32); d = Cast(dloss, float32); w = Cast(weight, float32)]  (float16 / bfloat16)
//   loss, log_prob = CrossEntropyLoss(LogSoftmaxV2(x), target[, w]; reduction, ignore_index)
//   sum:   dlogits = CrossEntropyLossGrad(d, log_prob, target[, w]; "sum")
//   mean:  g = CrossEntropyLossGrad(d, log_prob, target[, w]; "mean")   (all rows ignored: NaN)
//          some row ignored:  z = CrossEntropyLossGrad(0, log_prob, target; "sum")   (0 * exp(log_prob))
//                             dlogits = SelectV2(NotEqual(target, ignore_index) [N, 1], g, z)
//          no row ignored:    dlogits = g
//   [Cast loss, dlogits to T]
// LogSoftmaxV2 first: CANN's CrossEntropyLoss forms x - (max + log sum exp(x - max)), whose
// absolute error is an ulp of the row's largest logit (at logits ~ N(0, 10) gradients 9x less
// precise than the other route's); on log-probabilities (largest near 0) it is an ulp of those.
// The select keeps the op's own result for ignored rows (0, or NaN where their logits are not
// finite) when every row is ignored, where CANN's mean gradient divides by a count of 0, and when
// dloss is not finite. Whether a row is ignored is known on the host (the range check below reads
// every target there): with none, g is the result and the select would pick it everywhere.
//
// SoftmaxCrossEntropyWithLogits route, everywhere else:
//   [x = Cast(logits, float32); d = Cast(dloss, float32)]            (float16 / bfloat16 only)
//   onehot = Equal(target [N, 1], iota [1, C])                        [N, C] bool, built on the device
//   labels = SelectV2(onehot, (1 - eps) + eps / C, eps / C)           (eps = label_smoothing; float32
//            constants: eps = 0 gives the one-hot labels 1 and 0)
//   rows, backprop = SoftmaxCrossEntropyWithLogits(x, labels)         [N], [N, C]
//   eps = 0: rows = ReduceSum(SelectV2(onehot, LogSoftmaxV2(x), 0), [1]), negated below: the
//            target's log-probability (SoftmaxCrossEntropyWithLogits's rows are not used)
//   some row ignored:  valid = NotEqual(target, ignore_index)         [N] bool
//                      rows = SelectV2(valid, rows, 0)
//   total = ReduceSum(rows, [0], keep_dims)                           [1] (eps = 0: then Mul(total, -1))
//   mean:  loss = RealDiv(total, count); scale = RealDiv(d, count)    sum: loss = total, scale = d
//          count = ReduceSum(Cast(valid, float32), [0]) where a row is ignored, else the constant N
//   some row ignored:  w = SelectV2(valid [N, 1], scale, 0); dlogits = Mul(backprop, w)
//   no row ignored:    dlogits = Mul(backprop, scale)               (Mul broadcasts [N, 1], [1])
//   [Cast loss, dlogits to T]
// With class weights (w [C]) CANN's ops weigh each row by w[t] and the mean divides by the sum of the
// counted rows' w[t] (W): `lnSum = sum of lp_n * w_n; "mean": -lnSum / sum of w_n`, the gradient's
// `s_n = mask_n * w[t_n] * g / D`, D that same sum (hicann/ops-nn@e5c3fa93 loss/cross_entropy_loss/
// op_kernel/cross_entropy_loss.h, loss/cross_entropy_loss_grad/op_kernel/
// cross_entropy_loss_grad_weight_not_none.h; the simulator's cross_entropy_loss.cc models both):
// the op's definition. The zero-gradient z of ignored rows takes no weights (0 * exp(log_prob)).
//
// Class weights on every other SoC, or with label smoothing, take the weighted route below, all
// in float32:
//   [x, d, w = Cast(logits, dloss, weight, float32)]                 (float16 / bfloat16 only)
//   onehot = Equal(target [N, 1], iota [1, C])
//   eps = 0:  q = SelectV2(onehot, w [1, C], 0)                       [N, C]: w[t] at the target
//             w_t = ReduceSum(q, [1])                                 [N] (one term: exact)
//             rows = Mul(ReduceSum(SelectV2(onehot, LogSoftmaxV2(x), 0), [1]), w_t), negated below
//   eps > 0:  q = Mul(SelectV2(onehot, (1 - eps) + eps / C, eps / C), w [1, C])  (the weighted labels)
//             rows, _ = SoftmaxCrossEntropyWithLogits(x, q)           (-sum_c q * lsm: the row's loss)
//             mean: w_t = ReduceSum(SelectV2(onehot, w [1, C], 0), [1])
//   some row ignored:  valid = NotEqual(target, ignore_index); rows = SelectV2(valid, rows, 0)
//                      mean: w_t = SelectV2(valid, w_t, 0)
//   total = ReduceSum(rows, [0], keep_dims)  (eps = 0: then Mul(total, -1))
//   mean:  W = ReduceSum(w_t, [0], keep_dims); loss = RealDiv(total, W); scale = RealDiv(d, W)
//   sum:   loss = total, scale = d
//   r = SelectV2(valid [N, 1], scale, 0) where a row is ignored, else scale [1]
//   sq = Mul(q, r); m = ReduceSum(sq, [1], keep_dims)                 (s * q, s * sum_c q: [N, C], [N, 1])
//   dlogits = Sub(Mul(SoftmaxV2(x), m), sq)                           (s * (softmax * sum_c q - q))
//   [Cast loss, dlogits to T]
// SoftmaxCrossEntropyWithLogits's backprop (softmax - labels) is not the gradient once the labels
// do not sum to 1, hence SoftmaxV2. Rows of another class than the target's (ignore_index in [0, C)
// included) are zeroed by r = 0; "mean" with W = 0 gives NaN gradients in the rows that count (d / 0
// times their 0 weights, as the CPU kernel and PyTorch) and a NaN loss (0 / 0) with eps = 0; with
// eps > 0 the total is not 0 and the loss +inf where the CPU kernel's (PyTorch's nll 0 / 0) is NaN.
// iota, ignore_index, the axes, the label values, N, 0 and -1 are constant inputs
// (aclSetTensorConst): no device copy, and the same for every step of a shape. Whether some row is
// ignored is known on the host (the range check reads every target there); without one the masks
// would select the unmasked values everywhere.
// With eps = 0 the loss picks the target's log-probability with a select: SoftmaxCrossEntropyWithLogits's
// own loss sums labels * (log sum exp - (x - max)) over every class (hicann/ops-nn@e5c3fa93
// activation/softmax_cross_entropy_with_logits/op_kernel/arch35/
// softmax_cross_entropy_with_logits_full_load.h:213-237), where a -inf logit of another class
// gives 0 * inf = NaN; the CPU kernel's loss is finite there. With eps > 0 every class has a
// positive label, so that sum is the loss, +inf for a -inf logit as in PyTorch.
//
// On both routes ignored rows are selected away from the loss (not multiplied by 0), so a NaN or
// inf in them does not reach it, as in the exporter's graph. The targets are range-checked on the
// host first, as on the CPU EP (a target outside [0, C) that is not ignore_index fails the run
// naming the row and value): the op declares target a host input, so ORT keeps a fed target in
// host memory (a target computed on the device reaches it through ORT's own copy) and the kernel
// copies the checked [N] values to its scratch (aclrtMemcpyAsync from ordinary host memory, which
// returns once the copy is done). A training step's target is a graph input: no device-to-host copy per step. Without
// the check the one-hot route would count such a row with an all-zero label (finite loss, no
// error) and CANN's CrossEntropyLoss would read past the row. The CANN ops'
// availability on the SoC is checked at kernel creation.
#include <string>
#include <vector>

#include "cann/sequence_kernel.h"
#include "cann/soc.h"
#include "ops/softmax_cross_entropy_loss_and_grad/softmax_cross_entropy_loss_and_grad.h"

namespace ortops::softmax_cross_entropy_loss_and_grad {
namespace {

using cann::Device;
using cann::F32;
using cann::Float32Io;
using cann::HostConstant;
using cann::Mask;
using cann::ScratchLayout;
using cann::SequenceRun;

// Classes up to this many: the gradient's float32 comparison of target with ignore_index equals
// the int64 one for every target in [0, C) (integers below 2^24 are exact in float32, and no other
// int64 rounds to one of them).
constexpr int64_t kExactFloatIndices = int64_t{1} << 24;

template <typename T>
class CannKernel : public Kernel {
 public:
  CannKernel(const OrtKernelInfo* info, const DeclaredOp&, OrtStatusPtr* status) {
    *status = ReadAttributes(info, &attributes_);
    if (*status == nullptr) {
      *status = cann::KernelAcl(kName,
                                {"SoftmaxCrossEntropyWithLogits", "LogSoftmaxV2", "SoftmaxV2", "Equal", "NotEqual",
                                 "Cast", "SelectV2", "ReduceSum", "RealDiv", "Mul", "Sub"},
                                &acl_);
    }
    if (*status == nullptr) {
      const std::string family = cann::SocFamily(cann::SocName(*acl_));
      class_index_ops_ = (family == "ascend910b" || family == "ascend910_93") && attributes_.label_smoothing == 0.0f &&
                         cann::HasOps(*acl_, {"LogSoftmaxV2", "CrossEntropyLoss", "CrossEntropyLossGrad"});
    }
  }

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    Run run;
    ORTOPS_RETURN_IF_ERROR(GetInputs(context, &run));
    Outputs out;
    ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, 0, {}, &out.loss));
    ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, 1, run.logits.shape, &out.dlogits));
    if (run.n == 0 || run.c == 0) {
      return MakeError(std::string(kName) + " on CANN: logits shape " + ShapeText(run.logits.shape) +
                           " is empty; CANN's ops take no empty tensors (the CPU kernel does)",
                       ORT_NOT_IMPLEMENTED);
    }
    SequenceRun cann;
    ORTOPS_RETURN_IF_ERROR(SequenceRun::Begin(context, kName, &cann));
    size_t counted = 0;
    ORTOPS_RETURN_IF_ERROR(CountTargets(static_cast<const int64_t*>(run.target.data), static_cast<size_t>(run.n), run.c,
                                        attributes_.ignore_index, &counted));
    const bool some_ignored = counted != static_cast<size_t>(run.n);
    if (class_index_ops_ && run.c <= kExactFloatIndices) return ClassIndexRoute(context, run, some_ignored, cann, out);
    if (run.weight.present) return WeightedRoute(context, run, some_ignored, cann, out);
    return OneHotRoute(context, run, some_ignored, cann, out);
  }

 private:
  struct Outputs {
    void* loss = nullptr;
    void* dlogits = nullptr;
  };
  // After the lease: target copied from the host to its scratch buffer at `at`; `run` then reads it
  // there. From ordinary (pageable) host memory aclrtMemcpyAsync "returns only after the memory
  // copy task is complete" (CANN's documentation; the simulator does the same): no wait of our own.
  static OrtStatusPtr TargetToDevice(const SequenceRun& cann, size_t at, Run* run) {
    void* device = cann.Scratch(at);
    const size_t bytes = static_cast<size_t>(run->n) * sizeof(int64_t);
    const aclError rc =
        cann.acl->MemcpyAsync(device, bytes, run->target.data, bytes, ACL_MEMCPY_HOST_TO_DEVICE, cann.stream);
    if (rc != ACL_SUCCESS) return cann::AclError(*cann.acl, std::string(kName) + ": copying target to the device", rc);
    run->target.data = device;
    return nullptr;
  }

  OrtStatusPtr ClassIndexRoute(OrtKernelContext* context, Run run, bool some_ignored, SequenceRun& cann,
                               const Outputs& out) const {
    const auto n = static_cast<size_t>(run.n), c = static_cast<size_t>(run.c);
    const std::vector<int64_t> nc{run.n, run.c}, n1{run.n, 1}, rows_shape{run.n}, one{1};
    const size_t f32_nc = n * c * sizeof(float), f32_n = n * sizeof(float);
    const bool mean = attributes_.mean, masked = mean && some_ignored;
    ScratchLayout layout;
    const size_t at_lsm = layout.Add(f32_nc), at_lp = layout.Add(f32_nc), at_zloss = layout.Add(sizeof(float)),
                 at_lse = layout.Add(f32_n), at_g = layout.Add(masked ? f32_nc : 0),
                 at_z = layout.Add(masked ? f32_nc : 0), at_valid = layout.Add(masked ? n : 0),
                 at_target = layout.Add(n * sizeof(int64_t));
    Float32Io<T> f32;
    const size_t x = f32.Input(&layout, run.logits.data, nc), d = f32.Input(&layout, run.dloss.data, one);
    const bool weighted = run.weight.present;
    const size_t w = weighted ? f32.Input(&layout, run.weight.data, {run.c}) : 0;
    const size_t loss = f32.Output(&layout, out.loss, one), dlogits = f32.Output(&layout, out.dlogits, nc);
    ORTOPS_RETURN_IF_ERROR(cann.Lease(context, scratch_, run.logits.memory, layout.size()));
    ORTOPS_RETURN_IF_ERROR(TargetToDevice(cann, at_target, &run));
    ORTOPS_RETURN_IF_ERROR(f32.CastInputs(cann));
    const void* weight = weighted ? f32.In(w) : nullptr;  // class weights [C] float32, or none
    void* log_prob = cann.Scratch(at_lp);
    const char* reduction = mean ? "mean" : "sum";
    const size_t target_bytes = n * sizeof(int64_t);
    // CANN's CrossEntropyLoss forms x - (max + log sum exp(x - max)): an absolute error of about an
    // ulp of the row's largest logit. On log_softmax(x) (largest value <= 0, near 0 for a
    // confident row) that error is an ulp of the log-probabilities themselves.
    void* lsm = cann.Scratch(at_lsm);
    ORTOPS_RETURN_IF_ERROR(LogSoftmax(cann, f32.In(x), lsm, nc));
    cann::AclOp forward = cann.Op("CrossEntropyLoss");
    forward.Input(lsm, f32_nc, ACL_FLOAT, nc).Input(run.target.data, target_bytes, ACL_INT64, rows_shape);
    if (weighted) {
      forward.Input(weight, c * sizeof(float), ACL_FLOAT, {run.c});
    } else {
      forward.AbsentInput();
    }
    ORTOPS_RETURN_IF_ERROR(forward.Output(f32.Out(loss), sizeof(float), ACL_FLOAT, one)
                               .Output(log_prob, f32_nc, ACL_FLOAT, nc)
                               .Output(cann.Scratch(at_zloss), sizeof(float), ACL_FLOAT, one)
                               .Output(cann.Scratch(at_lse), f32_n, ACL_FLOAT, rows_shape)
                               .AttrString("reduction", reduction)
                               .AttrInt("ignore_index", attributes_.ignore_index)
                               .AttrFloat("label_smoothing", 0.0f)
                               .AttrFloat("lse_square_scale_for_zloss", 0.0f)
                               .AttrBool("return_zloss", false)
                               .Run(cann.stream));
    const float zero = 0.0f;
    if (!masked) {
      ORTOPS_RETURN_IF_ERROR(Grad(cann, f32.In(d), false, log_prob, weight, run, reduction, f32.Out(dlogits)));
    } else {
      void *g = cann.Scratch(at_g), *z = cann.Scratch(at_z), *valid = cann.Scratch(at_valid);
      ORTOPS_RETURN_IF_ERROR(Grad(cann, f32.In(d), false, log_prob, weight, run, "mean", g));
      ORTOPS_RETURN_IF_ERROR(Grad(cann, &zero, true, log_prob, nullptr, run, "sum", z));
      ORTOPS_RETURN_IF_ERROR(Valid(cann, run, valid));
      ORTOPS_RETURN_IF_ERROR(
          cann.Launch("SelectV2", {Mask(valid, n1), F32(g, nc), F32(z, nc)}, {F32(f32.Out(dlogits), nc)}));
    }
    return f32.CastOutputs();
  }

  // x_grad = CrossEntropyLossGrad(grad_loss [1] (a device value, or a constant), log_prob, target,
  // weight [C] float32 (or absent: null)).
  OrtStatusPtr Grad(const SequenceRun& cann, const void* grad_loss, bool grad_loss_is_const, const void* log_prob,
                    const void* weight, const Run& run, const char* reduction, void* x_grad) const {
    const std::vector<int64_t> nc{run.n, run.c}, one{1};
    const size_t f32_nc = static_cast<size_t>(run.n * run.c) * sizeof(float);
    cann::AclOp op = cann.Op("CrossEntropyLossGrad");
    if (grad_loss_is_const) {
      op.ConstInput(grad_loss, sizeof(float), ACL_FLOAT, one);
    } else {
      op.Input(grad_loss, sizeof(float), ACL_FLOAT, one);
    }
    op.Input(log_prob, f32_nc, ACL_FLOAT, nc)
        .Input(run.target.data, static_cast<size_t>(run.n) * sizeof(int64_t), ACL_INT64, {run.n});
    if (weight != nullptr) {
      op.Input(weight, static_cast<size_t>(run.c) * sizeof(float), ACL_FLOAT, {run.c});
    } else {
      op.AbsentInput();
    }
    return op.AbsentInput()
        .AbsentInput()
        .Output(x_grad, f32_nc, ACL_FLOAT, nc)
        .AttrString("reduction", reduction)
        .AttrInt("ignore_index", attributes_.ignore_index)
        .AttrFloat("label_smoothing", 0.0f)
        .AttrFloat("lse_square_scale_for_zloss", 0.0f)
        .Run(cann.stream);
  }

  // valid [N] bool = NotEqual(target, ignore_index).
  OrtStatusPtr Valid(const SequenceRun& cann, const Run& run, void* valid) const {
    return cann.Launch(
        "NotEqual", {Device(run.target.data, ACL_INT64, {run.n}), HostConstant(&attributes_.ignore_index, ACL_INT64)},
        {Mask(valid, {run.n})});
  }

  OrtStatusPtr OneHotRoute(OrtKernelContext* context, Run run, bool some_ignored, SequenceRun& cann,
                           const Outputs& out) const {
    const auto n = static_cast<size_t>(run.n), c = static_cast<size_t>(run.c);
    const std::vector<int64_t> nc{run.n, run.c}, n1{run.n, 1}, rows_shape{run.n}, one{1};
    const size_t f32_nc = n * c * sizeof(float), f32_n = n * sizeof(float);
    const float eps = attributes_.label_smoothing;
    const bool picks = eps == 0.0f, mean = attributes_.mean;

    ScratchLayout layout;
    const size_t at_onehot = layout.Add(n * c), at_labels = layout.Add(f32_nc), at_rows = layout.Add(f32_n),
                 at_backprop = layout.Add(f32_nc), at_lsm = layout.Add(picks ? f32_nc : 0),
                 at_picked = layout.Add(picks ? f32_nc : 0), at_valid = layout.Add(some_ignored ? n : 0),
                 at_masked = layout.Add(some_ignored ? f32_n : 0),
                 at_valid_f = layout.Add(some_ignored && mean ? f32_n : 0), at_sum = layout.Add(sizeof(float)),
                 at_total = layout.Add(sizeof(float)), at_count = layout.Add(sizeof(float)),
                 at_scale = layout.Add(sizeof(float)), at_w = layout.Add(some_ignored ? f32_n : 0),
                 at_target = layout.Add(n * sizeof(int64_t));
    Float32Io<T> f32;
    const size_t x = f32.Input(&layout, run.logits.data, nc), d = f32.Input(&layout, run.dloss.data, one);
    const size_t loss = f32.Output(&layout, out.loss, one), dlogits = f32.Output(&layout, out.dlogits, nc);
    ORTOPS_RETURN_IF_ERROR(cann.Lease(context, scratch_, run.logits.memory, layout.size()));
    ORTOPS_RETURN_IF_ERROR(TargetToDevice(cann, at_target, &run));
    ORTOPS_RETURN_IF_ERROR(f32.CastInputs(cann));
    char* s = cann.Scratch(0);
    void *onehot = s + at_onehot, *labels = s + at_labels, *rows = s + at_rows, *backprop = s + at_backprop,
         *valid = s + at_valid, *masked = s + at_masked, *valid_f = s + at_valid_f, *sum = s + at_sum,
         *total = s + at_total, *count = s + at_count, *scale = s + at_scale, *w = s + at_w, *lsm = s + at_lsm,
         *picked = s + at_picked;
    const void* x32 = f32.In(x);
    void* loss32 = f32.Out(loss);
    std::vector<int64_t> iota(c);
    for (size_t k = 0; k < c; ++k) iota[k] = static_cast<int64_t>(k);
    const int64_t axis = 0;
    // float32 arithmetic, as Add(Mul(one_hot, 1 - eps), eps / C) on the device would round it
    const float zero = 0.0f, uniform = eps / static_cast<float>(c), on = (1.0f - eps) + uniform;
    const float rows_f = static_cast<float>(run.n);
    ORTOPS_RETURN_IF_ERROR(
        cann.Launch("Equal", {Device(run.target.data, ACL_INT64, n1), HostConstant(iota.data(), ACL_INT64, {1, run.c})},
                    {Mask(onehot, nc)}));
    ORTOPS_RETURN_IF_ERROR(
        cann.Launch("SelectV2", {Mask(onehot, nc), HostConstant(&on, ACL_FLOAT), HostConstant(&uniform, ACL_FLOAT)},
                    {F32(labels, nc)}));
    ORTOPS_RETURN_IF_ERROR(cann.Launch("SoftmaxCrossEntropyWithLogits", {F32(x32, nc), F32(labels, nc)},
                                       {F32(rows, rows_shape), F32(backprop, nc)}));
    if (picks) {  // rows = log_softmax(x)[n, target[n]]: one value and zeros summed, exact in any order
      ORTOPS_RETURN_IF_ERROR(LogSoftmax(cann, x32, lsm, nc));
      ORTOPS_RETURN_IF_ERROR(
          cann.Launch("SelectV2", {Mask(onehot, nc), F32(lsm, nc), HostConstant(&zero, ACL_FLOAT)}, {F32(picked, nc)}));
      ORTOPS_RETURN_IF_ERROR(RowSums(cann, picked, nc, rows, false));
    }
    ORTOPS_RETURN_IF_ERROR(RowTotal(cann, run, some_ignored, picks, rows, valid, masked, sum, mean ? total : loss32));
    const void* scale_in = f32.In(d);
    if (mean) {
      cann::AclTensor divisor = HostConstant(&rows_f, ACL_FLOAT);
      if (some_ignored) {
        ORTOPS_RETURN_IF_ERROR(cann.Cast(valid, ACL_BOOL, valid_f, ACL_FLOAT, rows_shape));
        ORTOPS_RETURN_IF_ERROR(Sum(cann, valid_f, n, count, &axis));
        divisor = F32(count, one);
      }
      ORTOPS_RETURN_IF_ERROR(cann.Launch("RealDiv", {F32(total, one), divisor}, {F32(loss32, one)}));
      ORTOPS_RETURN_IF_ERROR(cann.Launch("RealDiv", {F32(f32.In(d), one), divisor}, {F32(scale, one)}));
      scale_in = scale;
    }
    cann::AclTensor weight = F32(scale_in, one);
    if (some_ignored) {
      ORTOPS_RETURN_IF_ERROR(
          cann.Launch("SelectV2", {Mask(valid, n1), weight, HostConstant(&zero, ACL_FLOAT)}, {F32(w, n1)}));
      weight = F32(w, n1);
    }
    ORTOPS_RETURN_IF_ERROR(cann.Launch("Mul", {F32(backprop, nc), weight}, {F32(f32.Out(dlogits), nc)}));
    return f32.CastOutputs();
  }

  OrtStatusPtr WeightedRoute(OrtKernelContext* context, Run run, bool some_ignored, SequenceRun& cann,
                             const Outputs& out) const {
    const auto n = static_cast<size_t>(run.n), c = static_cast<size_t>(run.c);
    const std::vector<int64_t> nc{run.n, run.c}, n1{run.n, 1}, rows_shape{run.n}, one{1}, one_c{1, run.c};
    const size_t f32_nc = n * c * sizeof(float), f32_n = n * sizeof(float);
    const float eps = attributes_.label_smoothing;
    const bool picks = eps == 0.0f, mean = attributes_.mean;
    const bool target_weights = picks || mean;  // w_t: the rows' factor (eps = 0) or W's terms (mean)

    ScratchLayout layout;
    const size_t at_onehot = layout.Add(n * c), at_labels = layout.Add(picks ? 0 : f32_nc), at_q = layout.Add(f32_nc),
                 at_wsel = layout.Add(!picks && mean ? f32_nc : 0), at_wt = layout.Add(target_weights ? f32_n : 0),
                 at_wt_masked = layout.Add(mean && some_ignored ? f32_n : 0), at_rows = layout.Add(f32_n),
                 at_backprop = layout.Add(picks ? 0 : f32_nc), at_lsm = layout.Add(picks ? f32_nc : 0),
                 at_picked = layout.Add(picks ? f32_nc : 0), at_picked_rows = layout.Add(picks ? f32_n : 0),
                 at_valid = layout.Add(some_ignored ? n : 0), at_masked = layout.Add(some_ignored ? f32_n : 0),
                 at_sum = layout.Add(sizeof(float)), at_total = layout.Add(sizeof(float)),
                 at_normaliser = layout.Add(sizeof(float)), at_scale = layout.Add(sizeof(float)),
                 at_r = layout.Add(some_ignored ? f32_n : 0), at_sq = layout.Add(f32_nc), at_m = layout.Add(f32_n),
                 at_probs = layout.Add(f32_nc), at_scaled = layout.Add(f32_nc),
                 at_target = layout.Add(n * sizeof(int64_t));
    Float32Io<T> f32;
    const size_t x = f32.Input(&layout, run.logits.data, nc), d = f32.Input(&layout, run.dloss.data, one),
                 w = f32.Input(&layout, run.weight.data, {run.c});
    const size_t loss = f32.Output(&layout, out.loss, one), dlogits = f32.Output(&layout, out.dlogits, nc);
    ORTOPS_RETURN_IF_ERROR(cann.Lease(context, scratch_, run.logits.memory, layout.size()));
    ORTOPS_RETURN_IF_ERROR(TargetToDevice(cann, at_target, &run));
    ORTOPS_RETURN_IF_ERROR(f32.CastInputs(cann));
    char* s = cann.Scratch(0);
    void *onehot = s + at_onehot, *labels = s + at_labels, *q = s + at_q, *wsel = s + at_wsel, *wt = s + at_wt,
         *wt_masked = s + at_wt_masked, *rows = s + at_rows, *backprop = s + at_backprop, *lsm = s + at_lsm,
         *picked = s + at_picked, *picked_rows = s + at_picked_rows, *valid = s + at_valid, *masked = s + at_masked,
         *sum = s + at_sum, *total = s + at_total, *normaliser = s + at_normaliser, *scale = s + at_scale,
         *r = s + at_r, *sq = s + at_sq, *m = s + at_m, *probs = s + at_probs, *scaled = s + at_scaled;
    const void *x32 = f32.In(x), *w32 = f32.In(w);
    void* loss32 = f32.Out(loss);
    std::vector<int64_t> iota(c);
    for (size_t k = 0; k < c; ++k) iota[k] = static_cast<int64_t>(k);
    const int64_t axis = 0;
    const float zero = 0.0f, uniform = eps / static_cast<float>(c), on = (1.0f - eps) + uniform;
    ORTOPS_RETURN_IF_ERROR(
        cann.Launch("Equal", {Device(run.target.data, ACL_INT64, n1), HostConstant(iota.data(), ACL_INT64, {1, run.c})},
                    {Mask(onehot, nc)}));
    if (picks) {  // q = w[t] at the target, 0 elsewhere; w_t = its row sums (one term each)
      ORTOPS_RETURN_IF_ERROR(
          cann.Launch("SelectV2", {Mask(onehot, nc), F32(w32, one_c), HostConstant(&zero, ACL_FLOAT)}, {F32(q, nc)}));
      ORTOPS_RETURN_IF_ERROR(RowSums(cann, q, nc, wt, false));
      // rows = log_softmax(x)[n, target[n]] * w_t (negated with the total)
      ORTOPS_RETURN_IF_ERROR(LogSoftmax(cann, x32, lsm, nc));
      ORTOPS_RETURN_IF_ERROR(
          cann.Launch("SelectV2", {Mask(onehot, nc), F32(lsm, nc), HostConstant(&zero, ACL_FLOAT)}, {F32(picked, nc)}));
      ORTOPS_RETURN_IF_ERROR(RowSums(cann, picked, nc, picked_rows, false));
      ORTOPS_RETURN_IF_ERROR(
          cann.Launch("Mul", {F32(picked_rows, rows_shape), F32(wt, rows_shape)}, {F32(rows, rows_shape)}));
    } else {  // the weighted smoothed labels, whose SoftmaxCrossEntropyWithLogits loss is the row's
      ORTOPS_RETURN_IF_ERROR(
          cann.Launch("SelectV2", {Mask(onehot, nc), HostConstant(&on, ACL_FLOAT), HostConstant(&uniform, ACL_FLOAT)},
                      {F32(labels, nc)}));
      ORTOPS_RETURN_IF_ERROR(cann.Launch("Mul", {F32(labels, nc), F32(w32, one_c)}, {F32(q, nc)}));
      ORTOPS_RETURN_IF_ERROR(cann.Launch("SoftmaxCrossEntropyWithLogits", {F32(x32, nc), F32(q, nc)},
                                         {F32(rows, rows_shape), F32(backprop, nc)}));
      if (mean) {
        ORTOPS_RETURN_IF_ERROR(cann.Launch(
            "SelectV2", {Mask(onehot, nc), F32(w32, one_c), HostConstant(&zero, ACL_FLOAT)}, {F32(wsel, nc)}));
        ORTOPS_RETURN_IF_ERROR(RowSums(cann, wsel, nc, wt, false));
      }
    }
    ORTOPS_RETURN_IF_ERROR(RowTotal(cann, run, some_ignored, picks, rows, valid, masked, sum, mean ? total : loss32));
    const void* weights = wt;
    if (some_ignored && mean) {  // valid: written by RowTotal
      ORTOPS_RETURN_IF_ERROR(cann.Launch("SelectV2",
                                         {Mask(valid, rows_shape), F32(wt, rows_shape), HostConstant(&zero, ACL_FLOAT)},
                                         {F32(wt_masked, rows_shape)}));
      weights = wt_masked;
    }
    const void* scale_in = f32.In(d);
    if (mean) {
      ORTOPS_RETURN_IF_ERROR(Sum(cann, weights, n, normaliser, &axis));
      ORTOPS_RETURN_IF_ERROR(cann.Launch("RealDiv", {F32(total, one), F32(normaliser, one)}, {F32(loss32, one)}));
      ORTOPS_RETURN_IF_ERROR(cann.Launch("RealDiv", {F32(f32.In(d), one), F32(normaliser, one)}, {F32(scale, one)}));
      scale_in = scale;
    }
    cann::AclTensor row_scale = F32(scale_in, one);
    if (some_ignored) {
      ORTOPS_RETURN_IF_ERROR(
          cann.Launch("SelectV2", {Mask(valid, n1), row_scale, HostConstant(&zero, ACL_FLOAT)}, {F32(r, n1)}));
      row_scale = F32(r, n1);
    }
    ORTOPS_RETURN_IF_ERROR(cann.Launch("Mul", {F32(q, nc), row_scale}, {F32(sq, nc)}));
    ORTOPS_RETURN_IF_ERROR(RowSums(cann, sq, nc, m, true));
    ORTOPS_RETURN_IF_ERROR(
        cann.Op("SoftmaxV2").Tensors({F32(x32, nc)}, {F32(probs, nc)}).AttrInts("axes", {1}).Run(cann.stream));
    ORTOPS_RETURN_IF_ERROR(cann.Launch("Mul", {F32(probs, nc), F32(m, n1)}, {F32(scaled, nc)}));
    ORTOPS_RETURN_IF_ERROR(cann.Launch("Sub", {F32(scaled, nc), F32(sq, nc)}, {F32(f32.Out(dlogits), nc)}));
    return f32.CastOutputs();
  }

  // out = the sums over the classes of the float32 [N, C] `in`: [N] ([N, 1] with keep_dims).
  static OrtStatusPtr RowSums(const SequenceRun& cann, const void* in, const std::vector<int64_t>& nc, void* out,
                              bool keep_dims) {
    static const int64_t class_axis = 1;
    const std::vector<int64_t> dims = keep_dims ? std::vector<int64_t>{nc[0], 1} : std::vector<int64_t>{nc[0]};
    return cann.Op("ReduceSum")
        .Tensors({F32(in, nc), HostConstant(&class_axis, ACL_INT64)}, {F32(out, dims)})
        .AttrBool("keep_dims", keep_dims)
        .Run(cann.stream);
  }

  // out [1] = the loss summed over the rows: rows [N] where no row is ignored, else selected against
  // valid = NotEqual(target, ignore_index) (written to `valid`; an ignored row's NaN or inf stays out
  // of the sum) into `masked`; negated (rows of log-probabilities) through `partial` when `negate`.
  OrtStatusPtr RowTotal(const SequenceRun& cann, const Run& run, bool some_ignored, bool negate, const void* rows,
                        void* valid, void* masked, void* partial, void* out) const {
    const std::vector<int64_t> rows_shape{run.n}, one{1};
    const int64_t axis = 0;
    const float zero = 0.0f, minus_one = -1.0f;
    const void* summed = rows;
    if (some_ignored) {
      ORTOPS_RETURN_IF_ERROR(Valid(cann, run, valid));
      ORTOPS_RETURN_IF_ERROR(
          cann.Launch("SelectV2", {Mask(valid, rows_shape), F32(rows, rows_shape), HostConstant(&zero, ACL_FLOAT)},
                      {F32(masked, rows_shape)}));
      summed = masked;
    }
    ORTOPS_RETURN_IF_ERROR(Sum(cann, summed, static_cast<size_t>(run.n), negate ? partial : out, &axis));
    if (!negate) return nullptr;
    return cann.Launch("Mul", {F32(partial, one), HostConstant(&minus_one, ACL_FLOAT)}, {F32(out, one)});
  }

  // out [1] = the sum of the float32 vector `in` [n].
  static OrtStatusPtr Sum(const SequenceRun& cann, const void* in, size_t n, void* out, const int64_t* axis) {
    return cann.Op("ReduceSum")
        .Tensors({F32(in, {static_cast<int64_t>(n)}), HostConstant(axis, ACL_INT64)}, {F32(out, {1})})
        .AttrBool("keep_dims", true)
        .Run(cann.stream);
  }
  // out = log_softmax(x) over the classes (x [N, C] float32).
  static OrtStatusPtr LogSoftmax(const SequenceRun& cann, const void* x, void* out, const std::vector<int64_t>& nc) {
    return cann.Op("LogSoftmaxV2").Tensors({F32(x, nc)}, {F32(out, nc)}).AttrInts("axes", {1}).Run(cann.stream);
  }

  Attributes attributes_;
  bool class_index_ops_ = false;  // the class-index route (Atlas A2/A3)
  const cann::AclApi* acl_ = nullptr;
  mutable cann::ScratchUser scratch_;
};

}  // namespace

void RegisterCann(OpList& list) { list.AddDeclared<Declaration, CannKernel>(); }

}  // namespace ortops::softmax_cross_entropy_loss_and_grad
