// Indexing along one axis: GatherElements / GatherElementsV2 (torch.gather) and ScatterElements
// (ONNX/torch scatter with reduction none/add/mul); and ScatterNonAliasingAdd (scatter-add of slices
// at K-dim index tuples). The one-axis ops' shapes follow torch: all ranks equal, the index tensor no
// larger than the other operands outside the indexed axis. Index values are only known on the device: a value
// outside the valid range (GatherElements, ScatterElements, ScatterNonAliasingAdd: [0, size of the
// axis), negative ones too, the kernels read them as unsigned or do not check; GatherElementsV2:
// [-size, size), negatives wrap) is a device fault (ACL_ERROR_RT_AICORE_EXCEPTION at the next sync)
// and nothing is written.
// Sources: hicann/ops-nn@e5c3fa93 index/gather_elements/op_kernel/arch35/gather_elements.h:101-108,
// index/scatter_elements/op_kernel/arch35/scatter_elements.h:493-548 (updates addressed with their
// own strides), mindspore-ai/graphengine@cd75e149 .../ops/selection_ops.h:268-294 (out-of-bound
// index: "an aic_error will occur"); hicann/ops-nn@e5c3fa93 index/gather_elements_v2/
// op_host/gather_elements_v2_def.cpp (dtypes, attr dim = 0), docs/aclnnGather.md:113,130,203 (rank
// 0-8, index in [-x.shape[dim], x.shape[dim] - 1]), op_kernel/gather_elements_v2_last_dim.h:328-335
// (DoNegativeIndices: index + size for index < 0); index/scatter_non_aliasing_add/README.md,
// op_host/scatter_non_aliasing_add_def.cpp (dtypes), op_host/arch35/
// scatter_non_aliasing_add_tiling_arch35.cpp:48-82 (shape checks, rank of x <= 8).
#include <cstring>
#include <type_traits>

#include "dtypes.h"
#include "op_call.h"

namespace aclsim {
namespace {

struct IndexGeom {
  size_t axis = 0;
  int64_t axis_size = 0;                // size of the indexed axis in x / data
  bool wrap_negative = false;           // [-axis_size, 0) is valid and adds axis_size
  std::vector<int64_t> index_strides;   // row-major strides of the index tensor
  std::vector<int64_t> target_strides;  // of x (gather) / data (scatter)
  std::vector<int64_t> other_strides;   // of updates (scatter)
};

aclError normalize_axis(const OpCall& c, const char* attr, int64_t value, size_t rank, size_t* axis) {
  const int64_t r = static_cast<int64_t>(rank);
  if (value < -r || value >= r)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute %s is %lld, expected a value in [%lld, %lld]",
                c.type.c_str(), attr, static_cast<long long>(value), static_cast<long long>(-r),
                static_cast<long long>(r - 1));
  *axis = static_cast<size_t>(value < 0 ? value + r : value);
  return ACL_SUCCESS;
}

// index dims <= `other` dims, on every axis except `skip` (rank already equal).
aclError expect_not_larger(const OpCall& c, const char* what, const OpTensor& index, const char* other_name,
                           const OpTensor& other, int64_t skip) {
  for (size_t d = 0; d < index.dims.size(); ++d) {
    if (static_cast<int64_t>(d) == skip || index.dims[d] <= other.dims[d]) continue;
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: %s has shape %s, larger than %s %s on dim %zu", c.type.c_str(), what,
                shape_str(index.dims).c_str(), other_name, shape_str(other.dims).c_str(), d);
  }
  return ACL_SUCCESS;
}

// Offsets of every index element in the target (x / data) and, optionally, in `other`; or a fault
// naming the first bad index.
bool resolve(const OpTensor& index, const char* index_name, const IndexGeom& g, const char* target_name,
             const std::vector<int64_t>& target_dims, std::vector<int64_t>* target, std::vector<int64_t>* other) {
  const size_t rank = index.dims.size();
  std::vector<int64_t> idx(rank, 0);
  target->resize(static_cast<size_t>(index.numel));
  if (other) other->resize(static_cast<size_t>(index.numel));
  for (int64_t i = 0; i < index.numel; ++i) {
    int64_t v = index_at(index, i);
    const int64_t lo = g.wrap_negative ? -g.axis_size : 0;
    if (v < lo || v >= g.axis_size) {
      device_fault("input 1 (%s) holds %lld at %s, outside [%lld, %lld) (dim %zu of %s %s)", index_name,
                   static_cast<long long>(v), index_str(i, index.dims).c_str(), static_cast<long long>(lo),
                   static_cast<long long>(g.axis_size), g.axis, target_name, shape_str(target_dims).c_str());
      return false;
    }
    if (v < 0) v += g.axis_size;
    int64_t t = 0, u = 0;
    for (size_t d = 0; d < rank; ++d) {
      t += (d == g.axis ? v : idx[d]) * g.target_strides[d];
      if (other) u += idx[d] * g.other_strides[d];
    }
    (*target)[i] = t;
    if (other) (*other)[i] = u;
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < index.dims[d]) break;
      idx[d] = 0;
    }
  }
  return true;
}

enum class Reduction { kNone, kAdd, kMul };

template <typename T>
void scatter_combine(void* y, int64_t yi, const void* u, int64_t ui, Reduction r) {
  using C = typename T::Compute;
  const C a = load_at<T>(y, yi), b = load_at<T>(u, ui);
  C v;
  if constexpr (std::is_same<C, float>::value) {
    v = r == Reduction::kAdd ? fadd(a, b) : fmul(a, b);
  } else if constexpr (std::is_floating_point<C>::value) {
    v = r == Reduction::kAdd ? a + b : a * b;
  } else {
    using U = std::make_unsigned_t<C>;  // integers wrap
    const uint64_t ua = static_cast<U>(a), ub = static_cast<U>(b);
    v = static_cast<C>(static_cast<U>(r == Reduction::kAdd ? ua + ub : ua * ub));
  }
  store_at<T>(y, yi, v);
}

// The gather of GatherElements and GatherElementsV2, which differ in the dtypes they take, the
// largest rank (0: any) and whether negative index values wrap.
aclError gather_kernel(const OpCall& c, Run* run, std::initializer_list<aclDataType> x_dtypes,
                       std::initializer_list<aclDataType> index_dtypes, size_t max_rank, bool wrap_negative) {
  if (aclError rc = expect_counts(c, 2, 1)) return rc;
  const OpTensor &x = c.in[0], &index = c.in[1], &y = c.out[0];
  if (aclError rc = expect_dtype_in(c, "input 0 (x)", x, x_dtypes)) return rc;
  if (aclError rc = expect_dtype_in(c, "input 1 (index)", index, index_dtypes)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  if (x.dims.empty() || index.dims.size() != x.dims.size())
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 1 (index) has shape %s, expected rank %zu (x %s)",
                c.type.c_str(), shape_str(index.dims).c_str(), x.dims.size(), shape_str(x.dims).c_str());
  if (max_rank > 0 && x.dims.size() > max_rank)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 0 (x) has shape %s, rank %zu, expected at most %zu",
                c.type.c_str(), shape_str(x.dims).c_str(), x.dims.size(), max_rank);
  IndexGeom g;
  g.wrap_negative = wrap_negative;
  if (aclError rc = normalize_axis(c, "dim", c.attr_int("dim", 0), x.dims.size(), &g.axis)) return rc;
  if (aclError rc = expect_not_larger(c, "input 1 (index)", index, "x", x, static_cast<int64_t>(g.axis))) return rc;
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", index.dims, "the shape of index")) return rc;
  g.axis_size = x.dims[g.axis];
  g.index_strides = row_major_strides(index.dims);
  g.target_strides = row_major_strides(x.dims);
  const size_t es = dtype_size(x.dtype);
  *run = [c, g, es] {
    std::vector<int64_t> src;
    if (!resolve(c.in[1], "index", g, "x", c.in[0].dims, &src, nullptr)) return;
    const auto* xs = static_cast<const unsigned char*>(c.in[0].data);
    auto* ys = static_cast<unsigned char*>(c.out[0].data);
    for (int64_t i = 0; i < c.out[0].numel; ++i) std::memmove(ys + i * es, xs + src[i] * es, es);
  };
  return ACL_SUCCESS;
}

// ScatterNonAliasingAdd: the offset in x of every K-tuple of `indices` (K = indices.shape[-1]), or
// a fault naming the first component outside [0, x.shape[k]) (the op does not check them).
bool resolve_tuples(const OpTensor& indices, const std::vector<int64_t>& x_dims, std::vector<int64_t>* offsets) {
  const size_t k_dims = static_cast<size_t>(indices.dims.back());
  const std::vector<int64_t> strides = row_major_strides(x_dims);
  int64_t tuples = 1;  // K = 0 (indices [..., 0]): every tuple is the empty one, offset 0
  for (size_t d = 0; d + 1 < indices.dims.size(); ++d) tuples *= indices.dims[d];
  offsets->assign(static_cast<size_t>(tuples), 0);
  for (int64_t i = 0; i < tuples; ++i) {
    for (size_t k = 0; k < k_dims; ++k) {
      const int64_t flat = i * static_cast<int64_t>(k_dims) + static_cast<int64_t>(k);
      const int64_t v = index_at(indices, flat);
      if (v < 0 || v >= x_dims[k]) {
        device_fault("input 1 (indices) holds %lld at %s, outside [0, %lld) (dim %zu of x %s)",
                     static_cast<long long>(v), index_str(flat, indices.dims).c_str(),
                     static_cast<long long>(x_dims[k]), k, shape_str(x_dims).c_str());
        return false;
      }
      (*offsets)[i] += v * strides[k];
    }
  }
  return true;
}

}  // namespace

// GatherElements(x, index; dim = 0) -> y (shape of index): y[i..] = x[i.. with index[i..] on dim].
aclError k_gather_elements(const OpCall& c, Run* run) {
  return gather_kernel(c, run,
                       {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT8, ACL_INT16, ACL_INT32, ACL_INT64, ACL_UINT8,
                        ACL_UINT16, ACL_UINT32, ACL_UINT64, ACL_BOOL},
                       {ACL_INT32, ACL_INT64}, 0, false);
}

// GatherElementsV2(x, index; dim = 0) -> y: GatherElements with the def's dtypes (x float, float16,
// bfloat16, int32; index int32), rank <= 8, and index values in [-size, size) (negatives wrap).
aclError k_gather_elements_v2(const OpCall& c, Run* run) {
  return gather_kernel(c, run, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT32}, {ACL_INT32}, 8, true);
}

namespace {

// ScatterElements and ScatterElementsV2 (data types `dtypes`): a copy of data (unless y is data's
// own buffer), then for every element of indices in row-major order y[.. indices[i..] on axis ..]
// = / += / *= updates[i..] (float16/bfloat16 in float32, one rounding per update; integers wrap).
// With "none" and a repeated index the last update wins; bool data takes "none" only.
aclError scatter_kernel(const OpCall& c, Run* run, std::initializer_list<aclDataType> dtypes) {
  if (aclError rc = expect_counts(c, 3, 1)) return rc;
  const OpTensor &data = c.in[0], &indices = c.in[1], &updates = c.in[2], &y = c.out[0];
  if (aclError rc = expect_dtype_in(c, "input 0 (data)", data, dtypes)) return rc;
  if (aclError rc = expect_dtype_in(c, "input 1 (indices)", indices, {ACL_INT32, ACL_INT64})) return rc;
  if (aclError rc = expect_same_dtype(c, "input 2 (updates)", updates, "input 0 (data)", data)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (data)", data)) return rc;
  if (data.dims.empty() || indices.dims.size() != data.dims.size() || updates.dims.size() != data.dims.size())
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: data %s, indices %s and updates %s must have the same rank (>= 1)",
                c.type.c_str(), shape_str(data.dims).c_str(), shape_str(indices.dims).c_str(),
                shape_str(updates.dims).c_str());
  IndexGeom g;
  if (aclError rc = normalize_axis(c, "axis", c.attr_int("axis", 0), data.dims.size(), &g.axis)) return rc;
  if (aclError rc = expect_not_larger(c, "input 1 (indices)", indices, "updates", updates, -1)) return rc;
  if (aclError rc = expect_not_larger(c, "input 1 (indices)", indices, "data", data, static_cast<int64_t>(g.axis)))
    return rc;
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", data.dims, "the shape of data")) return rc;
  const std::string red = c.attr_string("reduction", "none");
  Reduction r;
  if (red == "none")
    r = Reduction::kNone;
  else if (red == "add")
    r = Reduction::kAdd;
  else if (red == "mul")
    r = Reduction::kMul;
  else
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute reduction is \"%s\", expected \"none\", \"add\" or \"mul\"",
                c.type.c_str(), red.c_str());
  if (data.dtype == ACL_BOOL && r != Reduction::kNone)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH, "%s: attribute reduction is \"%s\", bool data takes \"none\" only",
                c.type.c_str(), red.c_str());
  g.axis_size = data.dims[g.axis];
  g.index_strides = row_major_strides(indices.dims);
  g.target_strides = row_major_strides(data.dims);
  g.other_strides = row_major_strides(updates.dims);
  const size_t es = dtype_size(data.dtype);
  visit_dtype(data.dtype, [&](auto tag) {
    using T = decltype(tag);
    *run = [c, g, es, r] {
      std::vector<int64_t> dst, src;
      if (!resolve(c.in[1], "indices", g, "data", c.in[0].dims, &dst, &src)) return;
      auto* ys = static_cast<unsigned char*>(c.out[0].data);
      const auto* us = static_cast<const unsigned char*>(c.in[2].data);
      if (c.in[0].bytes > 0 && c.out[0].data != c.in[0].data) std::memmove(ys, c.in[0].data, c.in[0].bytes);
      for (size_t i = 0; i < dst.size(); ++i) {
        if constexpr (!T::kBool) {
          if (r != Reduction::kNone) {
            scatter_combine<T>(ys, dst[i], us, src[i], r);
            continue;
          }
        }
        std::memmove(ys + dst[i] * es, us + src[i] * es, es);
      }
    };
  });
  return ACL_SUCCESS;
}

}  // namespace

// ScatterElements(data, indices, updates; axis = 0, reduction = "none") -> y (shape of data): see
// scatter_kernel. y may be data's own buffer.
aclError k_scatter_elements(const OpCall& c, Run* run) {
  return scatter_kernel(c, run,
                        {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT8, ACL_UINT8, ACL_INT16, ACL_INT32, ACL_INT64});
}

// ScatterElementsV2(var, indices, updates; axis = 0, reduction = "none", include_self = true) -> var:
// ScatterElements updating var in place (GE's REG_OP gives input and output one name; a separate
// output buffer gets the copy). Data types of its Atlas A2/A3 configuration (hicann/ops-nn@e5c3fa93
// index/scatter_elements_v2/op_host/scatter_elements_v2_def.cpp): float32, float16, bfloat16, int32,
// int8, uint8, bool; indices int32/int64 in [0, size) (README constraints; others fault).
// include_self only matters for a mean reduction, which the proto does not offer: false is refused.
aclError k_scatter_elements_v2(const OpCall& c, Run* run) {
  if (c.attr_int("include_self", 1) == 0)
    return fail(ACL_ERROR_OP_ATTR_NOT_MATCH,
                "ScatterElementsV2: attribute include_self is false (only the mean "
                "reduction, which this op does not have, reads it)");
  return scatter_kernel(c, run, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT32, ACL_INT8, ACL_UINT8, ACL_BOOL});
}

// The scatter of ScatterNonAliasingAdd and ScatterNdUpdate (`op`; x of `dtypes`, indices int32 /
// int64): y (shape of x) is a copy of x, then for every K-tuple t = indices[i] (K =
// indices.shape[-1] <= rank(x)), in row-major order of i over indices.shape[:-1], the slice y[t]
// (shape x.shape[K:]) takes updates[i] by `reduction`: added (float16/bfloat16 in float32, one
// rounding per update; integers wrap; repeated tuples accumulate in that order) or written
// (repeated tuples: the last one's). updates.shape = indices.shape[:-1] + x.shape[K:]; rank <= 8;
// an index outside [0, size) is a device fault. y may be x's own buffer.
template <typename... Tags>
aclError scatter_nd_kernel(const OpCall& c, Run* run, const char* op, Reduction reduction) {
  if (aclError rc = expect_counts(c, 3, 1)) return rc;
  const OpTensor &x = c.in[0], &indices = c.in[1], &updates = c.in[2], &y = c.out[0];
  if (aclError rc = expect_dtype_in(c, "input 0 (x)", x, {Tags::kType...})) return rc;
  if (aclError rc = expect_dtype_in(c, "input 1 (indices)", indices, {ACL_INT32, ACL_INT64})) return rc;
  if (aclError rc = expect_same_dtype(c, "input 2 (updates)", updates, "input 0 (x)", x)) return rc;
  if (aclError rc = expect_same_dtype(c, "output 0 (y)", y, "input 0 (x)", x)) return rc;
  if (x.dims.size() > 8)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input 0 (x) has shape %s, rank %zu, expected at most 8", op,
                shape_str(x.dims).c_str(), x.dims.size());
  if (indices.dims.empty() || indices.dims.back() > static_cast<int64_t>(x.dims.size()))
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "%s: input 1 (indices) has shape %s, expected rank >= 1 and a last dim (K) <= rank %zu of x %s", op,
                shape_str(indices.dims).c_str(), x.dims.size(), shape_str(x.dims).c_str());
  const size_t k_dims = static_cast<size_t>(indices.dims.back());
  std::vector<int64_t> want(indices.dims.begin(), indices.dims.end() - 1);
  want.insert(want.end(), x.dims.begin() + static_cast<std::ptrdiff_t>(k_dims), x.dims.end());
  if (updates.dims != want)
    return fail(ACL_ERROR_OP_INPUT_NOT_MATCH,
                "%s: input 2 (updates) has shape %s, expected %s (indices.shape[:-1] + "
                "x.shape[%zu:])",
                op, shape_str(updates.dims).c_str(), shape_str(want).c_str(), k_dims);
  if (aclError rc = expect_output_shape(c, 0, "output 0 (y)", x.dims, "the shape of x")) return rc;
  int64_t slice = 1;
  for (size_t d = k_dims; d < x.dims.size(); ++d) slice *= x.dims[d];
  visit_listed<Tags...>(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    *run = [c, slice, reduction] {
      std::vector<int64_t> dst;
      if (!resolve_tuples(c.in[1], c.in[0].dims, &dst)) return;
      if (c.in[0].bytes > 0 && c.out[0].data != c.in[0].data) std::memmove(c.out[0].data, c.in[0].data, c.in[0].bytes);
      const size_t es = dtype_size(c.in[0].dtype);
      auto* y = static_cast<unsigned char*>(c.out[0].data);
      const auto* u = static_cast<const unsigned char*>(c.in[2].data);
      for (size_t i = 0; i < dst.size(); ++i) {
        if (reduction == Reduction::kNone) {
          std::memmove(y + dst[i] * static_cast<int64_t>(es),
                       u + static_cast<int64_t>(i) * slice * static_cast<int64_t>(es), static_cast<size_t>(slice) * es);
          continue;
        }
        for (int64_t j = 0; j < slice; ++j)
          scatter_combine<T>(c.out[0].data, dst[i] + j, c.in[2].data, static_cast<int64_t>(i) * slice + j, reduction);
      }
    };
  });
  return ACL_SUCCESS;
}

// ScatterNonAliasingAdd(x, indices, updates) -> y: scatter_nd_kernel adding; float16, float32,
// int32 (hicann/ops-nn index/scatter_non_aliasing_add). y is a separate buffer in CANN
// ("Non-Aliasing"); x's own buffer is accepted too.
aclError k_scatter_non_aliasing_add(const OpCall& c, Run* run) {
  return scatter_nd_kernel<F16, F32, I32>(c, run, "ScatterNonAliasingAdd", Reduction::kAdd);
}

// ScatterNdUpdate(var, indices, updates; use_locking = false) -> var: scatter_nd_kernel writing, in
// place (GE's REG_OP gives input and output one name; a separate output buffer gets the copy). Data
// types of its Atlas A2/A3 configuration (hicann/ops-nn@e5c3fa93 index/scatter_nd_update/op_host/
// scatter_nd_update_def.cpp, aicoreConfigArch22): float16, float32, bfloat16, bool, int64, int32,
// int16, int8; README: Ascend 950, Atlas A2/A3 only. TF ScatterNdUpdate: a repeated index's slice
// is written once per occurrence; the simulator writes in index order (the last one stays).
aclError k_scatter_nd_update(const OpCall& c, Run* run) {
  return scatter_nd_kernel<F16, F32, BF16, Bool, I64, I32, I16, I8>(c, run, "ScatterNdUpdate", Reduction::kNone);
}

// The op types of this file (the registry, op_registry.cc, collects every file's).
ACLSIM_OPS(index, {"GatherElements", k_gather_elements}, {"GatherElementsV2", k_gather_elements_v2},
           {"ScatterElements", k_scatter_elements}, {"ScatterElementsV2", k_scatter_elements_v2},
           {"ScatterNonAliasingAdd", k_scatter_non_aliasing_add}, {"ScatterNdUpdate", k_scatter_nd_update})

}  // namespace aclsim
