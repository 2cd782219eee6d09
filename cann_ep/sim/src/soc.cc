// The SoC support matrix: SoC name -> family, and the op types a family's CANN does not claim.
// aclopCompileAndExecute refuses those with ACL_ERROR_OP_NOT_FOUND (op_execute.cc).
//
// Families follow CANN's own SoC -> short-SoC map (hicann/ops-nn@e5c3fa93
// scripts/util/opdesc_parser.py:19, hicann/opbase@aa3cd74b
// src/nnopbase/composite_op/aclnn_engine/op_kernel_lib.cpp:101). Availability is the product table
// of each op's README (or aclnn doc) in hicann/ops-nn@e5c3fa93 / hicann/ops-math@c4193324: an op
// is unavailable on a family whose row is marked x / 不支持. Unknown SoC names: every op type is
// available.
#include <cstring>
#include <string>

#include "aclsim.h"
#include "internal.h"

namespace aclsim {
namespace {

// The six product rows of the README tables, in their order.
enum Family : unsigned {
  k950 = 1u << 0,   // Ascend 950PR/950DT
  kA3 = 1u << 1,    // Atlas A3 training/inference
  kA2 = 1u << 2,    // Atlas A2 training/inference
  k310B = 1u << 3,  // Atlas 200I/500 A2 inference
  k310P = 1u << 4,  // Atlas inference series
  k910 = 1u << 5,   // Atlas training series
};

struct FamilyInfo {
  Family bit;
  const char* name;     // CANN's short SoC name
  const char* product;  // the README row (in English)
};
const FamilyInfo kFamilies[] = {
    {k950, "ascend950", "Ascend 950PR/Ascend 950DT"},
    {kA3, "ascend910_93", "Atlas A3 training/inference series"},
    {kA2, "ascend910b", "Atlas A2 training/inference series"},
    {k310B, "ascend310b", "Atlas 200I/500 A2 inference products"},
    {k310P, "ascend310p", "Atlas inference series"},
    {k910, "ascend910", "Atlas training series"},
};

// Where a family's row is: README tables have them on lines 7..12, aclnn docs on 8, 11, ..., 23.
enum Layout { kReadme, kAclnnDoc };

constexpr const char* kNN = "hicann/ops-nn@e5c3fa93";
constexpr const char* kMath = "hicann/ops-math@c4193324";

struct OpSupport {
  const char* op_type;
  const char* repo;
  const char* path;
  Layout layout;
  unsigned missing;  // Family bits whose row is marked x / 不支持
};

// The one table: every op type the simulator implements whose README (or aclnn doc, for op
// directories that only hold the aclnn API) marks a family, plus the op types of the toolkit's
// contract the simulator does not implement (docs/cann_ops.md, "SoC support matrix"). Op types
// not listed are available everywhere (no README: MatMulV2, BatchMatMul, Conv2D, SelectV2, ...).
const OpSupport kOpSupport[] = {
    // hicann/ops-nn
    {"EluGrad", kNN, "activation/elu_grad/README.md", kReadme, k310B},
    {"EluGradV2", kNN, "activation/elu_grad_v2/README.md", kReadme, k310B},
    {"LeakyReluGrad", kNN, "activation/leaky_relu_grad/README.md", kReadme, k310B},
    {"Relu", kNN, "activation/relu/README.md", kReadme, k310B},
    {"ReluGrad", kNN, "activation/relu_grad/README.md", kReadme, k310B},
    {"Sigmoid", kNN, "activation/sigmoid/README.md", kReadme, k310B},
    {"LogSoftmaxV2", kNN, "activation/log_softmax_v2/docs/aclnnLogSoftmax.md", kAclnnDoc, k310B},
    {"LogSoftmaxGrad", kNN, "activation/log_softmax_grad/docs/aclnnLogSoftmaxBackward.md", kAclnnDoc, k310B},
    {"SoftmaxCrossEntropyWithLogits", kNN, "activation/softmax_cross_entropy_with_logits/README.md", kReadme, k310B},
    {"CrossEntropyLoss", kNN, "loss/cross_entropy_loss/README.md", kReadme, k310B | k310P | k910},
    {"CrossEntropyLossGrad", kNN, "loss/cross_entropy_loss_grad/README.md", kReadme, k310B | k310P | k910},
    {"SparseSoftmaxCrossEntropyWithLogits", kNN, "loss/sparse_softmax_cross_entropy_with_logits/README.md", kReadme,
     kA3 | kA2 | k310B | k310P | k910},
    {"GatherElements", kNN, "index/gather_elements/README.md", kReadme, kA3 | kA2 | k310B | k310P | k910},
    {"ScatterElements", kNN, "index/scatter_elements/README.md", kReadme, kA3 | kA2 | k310B | k310P | k910},
    {"Conv2DBackpropInput", kNN, "conv/convolution_backward/README.md", kReadme, k310B},
    {"Conv2DBackpropFilter", kNN, "conv/convolution_backward/README.md", kReadme, k310B},
    {"MaxPoolV3", kNN, "pooling/max_pool_v3/README.md", kReadme, k310B},
    {"MaxPoolWithArgmaxV1", kNN, "pooling/max_pool3d_with_argmax_v2/docs/aclnnMaxPool2dWithMask.md", kAclnnDoc,
     k950 | k310B},
    {"MaxPoolGradWithArgmaxV1", kNN, "pooling/max_pool3d_grad_with_argmax/docs/aclnnMaxPool2dWithMaskBackward.md",
     kAclnnDoc, k950 | k310B | k310P},
    {"ApplyMomentum", kNN, "optim/apply_momentum/README.md", kReadme, k310B},
    {"ApplyAdam", kNN, "optim/apply_adam/README.md", kReadme, k310B},
    {"ApplyAdamD", kNN, "optim/apply_adam_d/README.md", kReadme, k310B},
    {"ApplyAdamW", kNN, "optim/apply_adam_w/README.md", kReadme, k310B},
    {"ApplyAdamWV2", kNN, "optim/apply_adam_w_v2/README.md", kReadme, k310B | k310P | k910},
    {"MatMulV3", kNN, "matmul/mat_mul_v3/README.md", kReadme, k310B | k910},
    {"BatchMatMulV3", kNN, "matmul/batch_mat_mul_v3/README.md", kReadme, k310B},
    // hicann/ops-math
    {"Add", kMath, "math/add/README.md", kReadme, k310B},
    {"Mul", kMath, "math/mul/README.md", kReadme, k310B},
    {"Div", kMath, "math/div/README.md", kReadme, k310P},
    {"TruncateDiv", kMath, "math/truncate_div/README.md", kReadme, k310P},
    {"Maximum", kMath, "math/maximum/README.md", kReadme, k310B},
    {"Minimum", kMath, "math/minimum/README.md", kReadme, k310B},
    {"Muls", kMath, "math/muls/README.md", kReadme, k310B},
    {"Adds", kMath, "math/adds/README.md", kReadme, k310B | k310P},
    {"Axpy", kMath, "math/axpy/README.md", kReadme, k310B},
    {"Abs", kMath, "math/abs/README.md", kReadme, k310B},
    {"Exp", kMath, "math/exp/README.md", kReadme, k310B | k310P | k910},
    {"Log", kMath, "math/log/README.md", kReadme, k310B | k310P | k910},
    {"Sqrt", kMath, "math/sqrt/README.md", kReadme, k310B | k310P},
    {"Reciprocal", kMath, "math/reciprocal/README.md", kReadme, k310B},
    {"Floor", kMath, "math/floor/README.md", kReadme, k310B},
    {"Ceil", kMath, "math/ceil/README.md", kReadme, k310B},
    {"Round", kMath, "math/round/README.md", kReadme, k310B | k310P},
    {"Erf", kMath, "math/erf/README.md", kReadme, k310B | k310P},
    {"Tanh", kMath, "math/tanh/README.md", kReadme, k310B | k310P},
    {"ReduceSum", kMath, "math/reduce_sum/README.md", kReadme, k310B},
    {"Select", kMath, "math/select/README.md", kReadme, k310B},
    {"Equal", kMath, "math/equal/README.md", kReadme, k310B},
    {"NotEqual", kMath, "math/not_equal/README.md", kReadme, k310B},
    {"Less", kMath, "math/less/README.md", kReadme, k310P},
    {"LessEqual", kMath, "math/less_equal/README.md", kReadme, k310B},
    {"Greater", kMath, "math/greater/README.md", kReadme, k310B},
    {"GreaterEqual", kMath, "math/greater_equal/README.md", kReadme, k310B},
    {"LogicalNot", kMath, "math/logical_not/docs/aclnnLogicalNot&aclnnInplaceLogicalNot.md", kAclnnDoc, k310B},
    {"LogicalAnd", kMath, "math/logical_and/README.md", kReadme, k310B},
    {"LogicalOr", kMath, "math/logical_or/README.md", kReadme, k310B},
    {"Slice", kMath, "conversion/slice/README.md", kReadme, k310B},
    {"Identity", kMath, "conversion/identity/README.md", kReadme, k310B},
};

// SoC name -> family. Exact names first (CANN's map), then prefixes; "Ascend910B" without a
// suffix is the Atlas training series, "Ascend910B<n>" is Atlas A2.
const FamilyInfo* family_of(const std::string& soc) {
  static const char* const kAscend910[] = {"Ascend910",     "Ascend910A",    "Ascend910B",
                                           "Ascend910ProA", "Ascend910ProB", "Ascend910PremiumA"};
  auto info = [](Family f) -> const FamilyInfo* {
    for (const auto& i : kFamilies)
      if (i.bit == f) return &i;
    return nullptr;
  };
  for (const char* name : kAscend910)
    if (soc == name) return info(k910);
  const struct {
    const char* prefix;
    Family family;
  } kPrefixes[] = {
      {"Ascend910_93", kA3}, {"Ascend910B", kA2}, {"Ascend310P", k310P}, {"Ascend310B", k310B}, {"Ascend950", k950}};
  for (const auto& p : kPrefixes)
    if (soc.rfind(p.prefix, 0) == 0) return info(p.family);
  return nullptr;
}

int row_line(Layout layout, Family f) {
  int row = 0;
  while ((1u << row) != static_cast<unsigned>(f)) ++row;
  return layout == kReadme ? 7 + row : 8 + 3 * row;
}

}  // namespace

const char* soc_family() {
  const FamilyInfo* f = family_of(soc_name());
  return f ? f->name : "unknown";
}

std::string soc_op_unavailable(const char* op_type) {
  const std::string soc = soc_name();
  const FamilyInfo* f = family_of(soc);
  if (f == nullptr || op_type == nullptr) return "";
  for (const OpSupport& s : kOpSupport) {
    if (std::strcmp(s.op_type, op_type) != 0 || (s.missing & f->bit) == 0) continue;
    return "op type " + std::string(op_type) + " is not available on SoC " + soc + " (" + f->name + "): " + s.repo +
           ":" + s.path + ":" + std::to_string(row_line(s.layout, f->bit)) + " marks \"" + f->product +
           "\" as not supported";
  }
  return "";
}

}  // namespace aclsim

extern "C" {

const char* aclsimSocFamily(void) { return aclsim::soc_family(); }

int aclsimOpAvailable(const char* op_type) {
  return op_type != nullptr && aclsim::soc_op_unavailable(op_type).empty() ? 1 : 0;
}

}  // extern "C"
