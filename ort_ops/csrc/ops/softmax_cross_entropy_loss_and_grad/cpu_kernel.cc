// SoftmaxCrossEntropyLossAndGrad on the CPU EP: the targets are checked first (a target outside
// [0, C) that is not ignore_index fails the run naming the row), then each row is computed in
// float64 (max, sum of exp, log: one row per work item on the session's intra-op pool for large
// inputs; with label smoothing eps the row's loss is (1 - eps) * -lsm[target] + eps / C * sum of
// -lsm over the classes in class order), the per-row losses summed in row order, and every result
// rounded to float32, then to T.
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
  double eps;     // label_smoothing
  double weight;  // w of the rows that count
  void* dlogits;
  std::vector<double>* rows;  // per-row loss (0 for ignored rows)

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
    const double w = counts ? weight : 0.0;
    const double uniform = eps / static_cast<double>(c);  // q's share of every class
    double picked = 0.0, all = 0.0;                       // -lsm at the target, summed over the classes
    for (int64_t k = 0; k < c; ++k) {
      const double lsm = (static_cast<double>(LoadFloat<T>(x, static_cast<size_t>(k))) - m) - log_sum;
      if (counts && k == t) picked = -lsm;
      if (eps != 0.0) all -= lsm;
      const double q = (counts && k == t ? 1.0 - eps : 0.0) + uniform;
      StoreFloat<T>(dx, static_cast<size_t>(k), static_cast<float>(w * (std::exp(lsm) - q)));
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
    const double dloss = LoadFloat<T>(run.dloss.data, 0);
    const double weight = !attributes_.mean ? dloss
                          : count > 0       ? dloss / static_cast<double>(count)
                                            : std::numeric_limits<double>::infinity();
    std::vector<double> rows(n, 0.0);
    Job<T> job{&run, &target, attributes_.ignore_index, attributes_.label_smoothing, weight, dlogits, &rows};
    if (run.c > 0) {
      const bool parallel = run.n * run.c >= kItemParallelMinElements && n > 1;
      ORTOPS_RETURN_IF_ERROR(ForEachItem(context, n, parallel, [&job](size_t r) { job.Row(r); }));
    }
    double total = 0.0;
    for (double v : rows) total += v;
    if (attributes_.mean) {
      total = count > 0 ? total / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN();
    }
    StoreFloat<T>(loss, 0, static_cast<float>(total));
    return nullptr;
  }
};

}  // namespace

void RegisterCpu(OpList& list) { list.AddDeclared<Declaration, CpuKernel>(); }

}  // namespace ortops::softmax_cross_entropy_loss_and_grad
