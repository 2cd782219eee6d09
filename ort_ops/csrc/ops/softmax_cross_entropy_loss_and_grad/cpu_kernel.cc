// SoftmaxCrossEntropyLossAndGrad on the CPU EP: the targets are checked first (a target outside
// [0, C) that is not ignore_index fails the run naming the row), then each row is computed in
// float64 (max, sum of exp, log: one row per work item on the session's intra-op pool for large
// inputs; the row's loss is w[t] * -lsm[t], with label smoothing eps (1 - eps) * w[t] * -lsm[t] +
// eps / C * the sum of w[c] * -lsm[c] over the classes in class order; w the class weights, 1s
// when absent), the per-row losses and the normaliser W (the sum of w[t] over the rows that count)
// summed in row order, and every result rounded to float32, then to T.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/parallel.h"
#include "ops/softmax_cross_entropy_loss_and_grad/softmax_cross_entropy_loss_and_grad.h"

namespace ortops::softmax_cross_entropy_loss_and_grad {
namespace {

template <typename T>
struct Job {
  const Run* run;
  const std::vector<int64_t>* target;
  int64_t ignore_index;
  double eps;                          // label_smoothing
  double scale;                        // s of the rows that count
  const std::vector<double>* classes;  // the class weights w (empty: every class weighs 1)
  void* dlogits;
  std::vector<double>* rows;  // per-row loss (0 for ignored rows)

  double ClassWeight(int64_t k) const { return classes->empty() ? 1.0 : (*classes)[static_cast<size_t>(k)]; }

  void Row(size_t r) const {
    const int64_t c = run->c;
    const void* x = ElementAt<T>(run->logits.data, r * static_cast<size_t>(c));
    void* dx = ElementAt<T>(dlogits, r * static_cast<size_t>(c));
    const int64_t t = (*target)[r];
    const bool counts = t != ignore_index;
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t k = 0; k < c; ++k) {
      const double v = LoadFloat<T>(x, static_cast<size_t>(k));
      if (std::isnan(v)) {
        m = v;
        break;
      }
      if (v > m) m = v;
    }
    double sum = 0.0;
    for (int64_t k = 0; k < c; ++k) sum += std::exp(static_cast<double>(LoadFloat<T>(x, static_cast<size_t>(k))) - m);
    const double log_sum = std::log(sum);
    const double s = counts ? scale : 0.0;
    const double uniform = eps / static_cast<double>(c);  // q's share of every class, per unit of weight
    const double target_weight = counts ? ClassWeight(t) : 0.0;
    // q[k] = (1 - eps) * w[t] * one_hot + eps / C * w[k]; its sum over the classes (1 without weights)
    double mass = 1.0;
    if (!classes->empty()) {
      double spread = 0.0;
      for (int64_t k = 0; k < c; ++k) spread += uniform * ClassWeight(k);
      mass = (1.0 - eps) * target_weight + spread;
    }
    double picked = 0.0, all = 0.0;  // -w[t] * lsm at the target, -w[k] * lsm summed over the classes
    for (int64_t k = 0; k < c; ++k) {
      const double lsm = (static_cast<double>(LoadFloat<T>(x, static_cast<size_t>(k))) - m) - log_sum;
      if (counts && k == t) picked = -target_weight * lsm;
      if (eps != 0.0) all -= ClassWeight(k) * lsm;
      const double q = (counts && k == t ? (1.0 - eps) * target_weight : 0.0) + uniform * ClassWeight(k);
      StoreFloat<T>(dx, static_cast<size_t>(k), static_cast<float>(s * (std::exp(lsm) * mass - q)));
    }
    // eps = 0: the target's term alone (a -inf logit of another class adds nothing)
    (*rows)[r] = !counts ? 0.0 : eps == 0.0 ? picked : (1.0 - eps) * picked + uniform * all;
  }
};

template <typename T>
struct CpuKernel : CheckedAttributesKernel<Attributes, ReadAttributes> {
  using CheckedAttributesKernel::CheckedAttributesKernel;

  OrtStatusPtr ComputeV2(OrtKernelContext* context) const override {
    Run run;
    ORTOPS_RETURN_IF_ERROR(GetInputs(context, &run));
    void* loss = nullptr;
    void* dlogits = nullptr;
    ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, 0, {}, &loss));
    ORTOPS_RETURN_IF_ERROR(AllocateOutput(context, 1, run.logits.shape, &dlogits));
    const auto n = static_cast<size_t>(run.n);
    std::vector<int64_t> target(n);
    if (n > 0) std::memcpy(target.data(), run.target.data, n * sizeof(int64_t));
    size_t count = 0;
    ORTOPS_RETURN_IF_ERROR(CountTargets(target.data(), n, run.c, attributes_.ignore_index, &count));
    std::vector<double> classes;
    if (run.weight.present) {
      classes.resize(static_cast<size_t>(run.c));
      for (size_t k = 0; k < classes.size(); ++k) classes[k] = LoadFloat<T>(run.weight.data, k);
    }
    // W: the sum of w[t] over the rows that count, in row order (their count without weights)
    double normaliser = static_cast<double>(count);
    if (!classes.empty()) {
      normaliser = 0.0;
      for (size_t r = 0; r < n; ++r) {
        if (target[r] != attributes_.ignore_index) normaliser += classes[static_cast<size_t>(target[r])];
      }
    }
    const double dloss = LoadFloat<T>(run.dloss.data, 0);
    // W = 0: NaN loss (PyTorch's 0 / 0); the rows that count (weighing 0 each) get NaN gradients
    const double scale = !attributes_.mean   ? dloss
                         : normaliser != 0.0 ? dloss / normaliser
                                             : std::numeric_limits<double>::quiet_NaN();
    std::vector<double> rows(n, 0.0);
    Job<T> job{&run, &target, attributes_.ignore_index, attributes_.label_smoothing, scale, &classes, dlogits, &rows};
    if (run.c > 0) {
      ORTOPS_RETURN_IF_ERROR(ForEachItem(context, n, run.n * run.c, [&job](size_t r) { job.Row(r); }));
    }
    double total = 0.0;
    for (double v : rows) total += v;
    if (attributes_.mean) {
      total = normaliser != 0.0 ? total / normaliser : std::numeric_limits<double>::quiet_NaN();
    }
    StoreFloat<T>(loss, 0, static_cast<float>(total));
    return nullptr;
  }
};

}  // namespace

void RegisterCpu(OpList& list) { list.AddDeclared<Declaration, CpuKernel>(); }

}  // namespace ortops::softmax_cross_entropy_loss_and_grad
