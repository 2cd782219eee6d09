// ReduceSum(x, axes; keep_dims = false, noop_with_empty_axes = true) -> y
// (hicann/ops-math@c4193324 math/reduce_sum/op_graph/reduce_sum_proto.h:55; shape rules of
// common/inc/op_host/infershape_reduce_util.h: axes in [-rank, rank-1], negative ones wrap, a
// repeated axis counts once; empty axes: y = x when noop_with_empty_axes, else every axis).
// Each output element sums its inputs in increasing (row-major) order, starting from the first
// one: float32 accumulation for float32/float16/bfloat16 (one rounding at the end), float64 for
// float64, integers wrap. Axes given in device memory are read when the op runs; a bad value then
// is a device fault.
// ReduceMean(x, axes; keep_dims = false, noop_with_empty_axes = true) -> y: the same inputs,
// attributes and shape rules (hicann/ops-math@60ac0cca math/reduce_mean/op_graph/reduce_mean_proto.h:
// REG_OP(ReduceMean)); each output is that sum divided by the number of reduced elements, in the
// accumulator type, rounded once (a reduction over no element gives 0/0, NaN). Float types only
// here (the spec also lists integer and complex ones, which nothing launches).
// ReduceMax / ReduceMin(x, axes; keep_dims = false, noop_with_empty_axes = true) -> y: the same
// inputs, attributes and shape rules (hicann/ops-math@c4193324 math/reduce_max/op_graph/
// reduce_max_proto.h, REG_OP(ReduceMax), math/reduce_min/op_graph/reduce_min_proto.h; axes in
// [-rank, rank - 1]); each output is the largest / smallest of its inputs, a NaN among them gives
// NaN (the rule the device's max/min kernels keep: a NaN replaces the running value); float32,
// float16, bfloat16, float64, int32, int64 here. A reduction over no element has no value: refused.
// ReduceAny / ReduceAll(x, axes; keep_dims = false) -> y bool: the same axes and shape rules
// (hicann/ops-math@c4193324 math/reduce_any/op_graph/reduce_any_proto.h: x bool or float32;
// math/reduce_all/op_graph/reduce_all_proto.h: x bool, bfloat16, float32, float16; READMEs: every
// product line; TensorFlow's reduce_any / reduce_all, which they are compatible with): the logical
// or / and of the reduced elements (a float is true when it is not 0, so NaN is true); over no
// element the identity, false / true. No noop_with_empty_axes attribute: empty axes reduce every
// dim (the TF rule; the simulator requires constant axes).
#include <cstring>
#include <type_traits>

#include "dtypes.h"
#include "op_call.h"
#include "wrapping_sum.h"

namespace aclsim {
namespace {

struct ReducePlan {
  std::vector<bool> reduced;      // per input dim
  std::vector<int64_t> out_dims;  // with keep_dims applied
  bool identity = false;          // empty axes with noop_with_empty_axes
};

// Builds the plan from axis values; "" or what is wrong with them.
std::string plan_reduce(const std::vector<int64_t>& x_dims, const std::vector<int64_t>& axes, bool keep_dims,
                        bool noop_empty, ReducePlan* p) {
  const int64_t rank = static_cast<int64_t>(x_dims.size());
  p->reduced.assign(x_dims.size(), false);
  p->identity = axes.empty() && noop_empty;
  if (p->identity) {
    p->out_dims = x_dims;
    return "";
  }
  if (axes.empty()) p->reduced.assign(x_dims.size(), true);
  const int64_t lo = rank == 0 ? -1 : -rank, hi = rank == 0 ? 0 : rank - 1;
  for (int64_t a : axes) {
    if (a < lo || a > hi)
      return "axis " + std::to_string(a) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) +
             "] for x " + shape_str(x_dims);
    if (rank > 0) p->reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  }
  p->out_dims.clear();
  for (size_t d = 0; d < x_dims.size(); ++d) {
    if (!p->reduced[d])
      p->out_dims.push_back(x_dims[d]);
    else if (keep_dims)
      p->out_dims.push_back(1);
  }
  return "";
}

bool shape_fits(const std::vector<int64_t>& want, const std::vector<int64_t>& got) {
  return got == want || (want.empty() && got == std::vector<int64_t>{1});
}

enum class Reduce { kSum, kMean, kMax, kMin, kProd };

// The running max / min: `v` replaces `acc` if it is larger / smaller or NaN; a NaN stays.
template <typename C>
C extreme(Reduce r, C acc, C v) {
  if constexpr (std::is_floating_point<C>::value) {
    if (acc != acc) return acc;
    if (v != v) return v;
  }
  return (r == Reduce::kMax ? v > acc : v < acc) ? v : acc;
}

// The number of output elements of reducing `dims` over `reduced`; then f(i, o) for every input
// element i in row-major order, o its output position (row-major over the kept dims).
template <typename F>
int64_t for_each_input(const std::vector<int64_t>& dims, const std::vector<bool>& reduced, int64_t numel, F f) {
  const size_t rank = dims.size();
  std::vector<int64_t> state(2 * rank, 0);  // per dim: its output stride (0 if reduced), then its index
  int64_t* out_stride = state.data();
  int64_t* idx = state.data() + rank;
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    if (reduced[d]) continue;
    out_stride[d] = stride;
    stride *= dims[d];
  }
  int64_t o = 0;
  for (int64_t i = 0; i < numel; ++i) {
    f(i, o);
    for (size_t d = rank; d-- > 0;) {  // the row-major successor's index and output position
      ++idx[d];
      o += out_stride[d];
      if (idx[d] < dims[d]) break;
      o -= out_stride[d] * dims[d];
      idx[d] = 0;
    }
  }
  return stride;
}

// The number of output elements of reducing `dims` over `reduced`.
int64_t output_count(const std::vector<int64_t>& dims, const std::vector<bool>& reduced) {
  int64_t n = 1;
  for (size_t d = 0; d < dims.size(); ++d)
    if (!reduced[d]) n *= dims[d];
  return n;
}

template <typename T>
void reduce(const OpCall& c, const ReducePlan& p, Reduce r) {
  const OpTensor &x = c.in[0], &y = c.out[0];
  if (p.identity) {
    if (x.bytes > 0 && y.data != x.data) std::memmove(y.data, x.data, x.bytes);
    return;
  }
  using C = typename T::Compute;
  using Acc = WrappingAccumulatorOf<C>;
  const int64_t n_out = output_count(x.dims, p.reduced);
  std::vector<Acc> acc(static_cast<size_t>(n_out), Acc(0));
  std::vector<bool> started(static_cast<size_t>(n_out), false);
  for_each_input(x.dims, p.reduced, x.numel, [&](int64_t i, int64_t o) {
    if (r == Reduce::kMax || r == Reduce::kMin) {
      const C v = static_cast<C>(load_at<T>(x.data, i));
      const C prev = static_cast<C>(acc[o]);
      acc[o] = static_cast<Acc>(started[o] ? extreme(r, prev, v) : v);
      started[o] = true;
      return;
    }
    const Acc v = static_cast<Acc>(load_at<T>(x.data, i));
    if (r == Reduce::kProd) {
      if constexpr (std::is_same<Acc, float>::value) {
        acc[o] = started[o] ? fmul(acc[o], v) : v;
      } else if constexpr (std::is_floating_point<Acc>::value) {
        const Acc product = acc[o] * v;
        acc[o] = !started[o] ? v : product != product ? nan_result(acc[o], v) : product;
      } else {
        acc[o] = static_cast<Acc>(started[o] ? static_cast<Acc>(acc[o] * v) : v);  // unsigned: wraps
      }
      started[o] = true;
      return;
    }
    if constexpr (std::is_same<Acc, float>::value) {
      acc[o] = started[o] ? fadd(acc[o], v) : v;
    } else if constexpr (std::is_floating_point<Acc>::value) {
      const Acc sum = acc[o] + v;
      acc[o] = !started[o] ? v : sum != sum ? nan_result(acc[o], v) : sum;
    } else {
      acc[o] = static_cast<Acc>(acc[o] + v);  // unsigned: wraps
    }
    started[o] = true;
  });
  if constexpr (std::is_floating_point<Acc>::value) {
    if (r == Reduce::kMean) {
      const Acc count = static_cast<Acc>(n_out == 0 ? 0 : x.numel / n_out);
      for (Acc& a : acc) {
        if constexpr (std::is_same<Acc, float>::value)
          a = fdiv(a, count);
        else
          a = a / count;
      }
    }
  }
  if (r == Reduce::kProd)  // the empty product
    for (int64_t j = 0; j < n_out; ++j)
      if (!started[static_cast<size_t>(j)]) acc[static_cast<size_t>(j)] = Acc(1);
  for (int64_t j = 0; j < n_out; ++j) store_at<T>(y.data, j, static_cast<C>(acc[j]));
}

}  // namespace

// A ReduceMax / ReduceMin whose outputs reduce no element (x empty, y not): no value to give.
static bool no_extreme(Reduce kind, const OpTensor& x, const ReducePlan& p) {
  if ((kind != Reduce::kMax && kind != Reduce::kMin) || x.numel != 0 || p.identity) return false;
  int64_t outputs = 1;
  for (int64_t d : p.out_dims) outputs *= d;
  return outputs > 0;
}

// ReduceSum / ReduceMean / ReduceMax / ReduceMin (`op`): the checks of the inputs, then the launch.
static aclError k_reduce(const OpCall& c, Run* run, const char* op, Reduce kind) {
  const OpTensor& x = c.in[0];
  std::vector<int64_t> axes;
  bool known;
  if (aclError rc = read_index_list(c, 1, "input 1 (axes)", false, &axes, &known)) return rc;
  const bool keep_dims = c.attr_int("keep_dims", 0) != 0;
  const bool noop_empty = c.attr_int("noop_with_empty_axes", 1) != 0;
  ReducePlan plan;
  if (known || c.in[1].numel == 0) {  // const (or empty) axes: everything is checked now
    std::string bad = plan_reduce(x.dims, axes, keep_dims, noop_empty, &plan);
    if (!bad.empty())
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 1 (axes) %s: %s", op, shape_str(axes).c_str(), bad.c_str());
    if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", plan.out_dims,
                                          keep_dims ? "x reduced over axes, keep_dims=true" : "x reduced over axes"))
      return rc;
    if (no_extreme(kind, x, plan))
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 0 (x) %s has no element to take the %s of", op,
                  shape_str(x.dims).c_str(), kind == Reduce::kMax ? "maximum" : "minimum");
  }
  visit_dtype(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!T::kBool)
      *run = [c, plan, known, keep_dims, noop_empty, kind] {
        if (known || c.in[1].numel == 0) return reduce<T>(c, plan, kind);
        std::vector<int64_t> values;  // axes in device memory: read and checked now, in stream order
        for (int64_t i = 0; i < c.in[1].numel; ++i) values.push_back(index_at(c.in[1], i));
        ReducePlan p;
        std::string bad = plan_reduce(c.in[0].dims, values, keep_dims, noop_empty, &p);
        if (bad.empty() && no_extreme(kind, c.in[0], p)) bad = "a maximum / minimum over no element";
        if (bad.empty() && !shape_fits(p.out_dims, c.out[0].dims))
          bad = "gives y shape " + shape_str(p.out_dims) + ", but output 0 (y) is " + shape_str(c.out[0].dims);
        if (!bad.empty()) return device_fault("input 1 (axes) %s: %s", shape_str(values).c_str(), bad.c_str());
        reduce<T>(c, p, kind);
      };
  });
  return ACL_SUCCESS;
}

aclError k_reduce_sum(const OpCall& c, Run* run) {
  if (aclError rc = expect_x_to_y(c, 2, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE, ACL_INT32, ACL_INT64}))
    return rc;
  return k_reduce(c, run, "ReduceSum", Reduce::kSum);
}

aclError k_reduce_mean(const OpCall& c, Run* run) {
  if (aclError rc = expect_x_to_y(c, 2, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE})) return rc;
  return k_reduce(c, run, "ReduceMean", Reduce::kMean);
}

aclError k_reduce_max(const OpCall& c, Run* run) {
  if (aclError rc = expect_x_to_y(c, 2, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE, ACL_INT32, ACL_INT64}))
    return rc;
  return k_reduce(c, run, "ReduceMax", Reduce::kMax);
}

// ReduceProd(x, axes; keep_dims = false, noop_with_empty_axes = true) -> y (hicann/ops-math
// math/reduce_prod/op_graph/reduce_prod_proto.h, REG_OP(ReduceProd), TensorFlow's ReduceProd; README:
// every product line but Atlas 200I/500 A2): the same inputs and shape rules as ReduceSum; each
// output multiplies its inputs in increasing (row-major) order from the first one (float32 for
// float32/float16/bfloat16, one rounding at the end; float64; integers wrap); over no element 1.
aclError k_reduce_prod(const OpCall& c, Run* run) {
  if (aclError rc = expect_x_to_y(c, 2, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE, ACL_INT32, ACL_INT64}))
    return rc;
  return k_reduce(c, run, "ReduceProd", Reduce::kProd);
}

aclError k_reduce_min(const OpCall& c, Run* run) {
  if (aclError rc = expect_x_to_y(c, 2, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE, ACL_INT32, ACL_INT64}))
    return rc;
  return k_reduce(c, run, "ReduceMin", Reduce::kMin);
}

// ReduceAny (`any`) / ReduceAll: constant axes, x of `types`, y bool.
static aclError k_reduce_logical(const OpCall& c, Run* run, bool any, std::initializer_list<aclDataType> types) {
  const char* op = any ? "ReduceAny" : "ReduceAll";
  if (aclError rc = expect_counts(c, 2, 1)) return rc;
  if (aclError rc = expect_dtype_in(c, "input 0 (x)", c.in[0], types)) return rc;
  if (aclError rc = expect_dtype_in(c, "output 0 (y)", c.out[0], {ACL_BOOL})) return rc;
  std::vector<int64_t> axes;
  bool known;
  if (aclError rc = read_index_list(c, 1, "input 1 (axes)", true, &axes, &known)) return rc;
  const bool keep_dims = c.attr_int("keep_dims", 0) != 0;
  ReducePlan plan;
  std::string bad = plan_reduce(c.in[0].dims, axes, keep_dims, /*noop_empty=*/false, &plan);
  if (!bad.empty())
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 1 (axes) %s: %s", op, shape_str(axes).c_str(), bad.c_str());
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", plan.out_dims,
                                        keep_dims ? "x reduced over axes, keep_dims=true" : "x reduced over axes"))
    return rc;
  visit_dtype(c.in[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    *run = [c, plan, any] {
      const OpTensor& x = c.in[0];
      auto* y = static_cast<unsigned char*>(c.out[0].data);
      std::memset(y, any ? 0 : 1, static_cast<size_t>(output_count(x.dims, plan.reduced)));
      for_each_input(x.dims, plan.reduced, x.numel, [&](int64_t i, int64_t o) {
        bool v;
        if constexpr (T::kBool) {
          v = static_cast<const unsigned char*>(x.data)[i] != 0;
        } else {
          v = load_at<T>(x.data, i) != 0;  // NaN != 0: true
        }
        y[o] = static_cast<unsigned char>(any ? (y[o] | v) : (y[o] & v));
      });
    };
  });
  return ACL_SUCCESS;
}

aclError k_reduce_any(const OpCall& c, Run* run) { return k_reduce_logical(c, run, true, {ACL_BOOL, ACL_FLOAT}); }

aclError k_reduce_all(const OpCall& c, Run* run) {
  return k_reduce_logical(c, run, false, {ACL_BOOL, ACL_BF16, ACL_FLOAT, ACL_FLOAT16});
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(reduce, {"ReduceSum", k_reduce_sum}, {"ReduceMean", k_reduce_mean}, {"ReduceMax", k_reduce_max},
           {"ReduceMin", k_reduce_min}, {"ReduceProd", k_reduce_prod}, {"ReduceAny", k_reduce_any},
           {"ReduceAll", k_reduce_all})

}  // namespace aclsim
