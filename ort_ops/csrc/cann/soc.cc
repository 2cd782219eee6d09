// The SoC support table (see soc.h). Sources: the README product tables of hicann/ops-nn @e5c3fa93
// and hicann/ops-math @c4193324 (paths in docs/cann_ops.md, "SoC support matrix").
#include "cann/soc.h"

#include <cstring>
#include <mutex>

namespace ortops::cann {
namespace {

struct Family {
  const char* prefix;  // SoC names starting with it
  const char* family;
};
// Longest prefixes first. "Ascend910B<digit>" is Atlas A2 (910B1..910B4); other Ascend910 names
// (Ascend910A, Ascend910B, Ascend910ProA/ProB, Ascend910PremiumA) are the Atlas training series.
const Family kFamilies[] = {
    {"Ascend910_93", "ascend910_93"}, {"Ascend910B1", "ascend910b"}, {"Ascend910B2", "ascend910b"},
    {"Ascend910B3", "ascend910b"},    {"Ascend910B4", "ascend910b"}, {"Ascend910", "ascend910"},
    {"Ascend310P", "ascend310p"},     {"Ascend310B", "ascend310b"},  {"Ascend950", "ascend950"},
};

struct Missing {
  const char* family;
  const char* op_type;
  const char* source;
};
constexpr const char* kNN = "hicann/ops-nn README";
constexpr const char* kMath = "hicann/ops-math README";
// Every op the kernels launch, or a CANN EP kernel placement leaves a node to (rewrite/placement/
// ep_launches.py), whose README marks a product x (or, for an op without a README, the
// README of the aclnn API that launches it); docs/cann_ops.md cites each line.
const Missing kMissing[] = {
    // Atlas 200I/500 A2 inference products (Ascend 310B)
    {"ascend310b", "EluGrad", kNN},
    {"ascend310b", "EluGradV2", kNN},
    {"ascend310b", "LeakyReluGrad", kNN},
    {"ascend310b", "Exp", kMath},
    {"ascend310b", "Log", kMath},
    {"ascend310b", "LogSoftmaxV2", kNN},
    {"ascend310b", "LogSoftmaxGrad", kNN},
    {"ascend310b", "SoftmaxCrossEntropyWithLogits", kNN},
    {"ascend310b", "CrossEntropyLoss", kNN},
    {"ascend310b", "CrossEntropyLossGrad", kNN},
    {"ascend310b", "ReduceSum", kMath},
    {"ascend310b", "Select", kMath},
    {"ascend310b", "Equal", kMath},
    {"ascend310b", "NotEqual", kMath},
    {"ascend310b", "LessEqual", kMath},
    {"ascend310b", "Greater", kMath},
    {"ascend310b", "GreaterEqual", kMath},
    {"ascend310b", "LogicalNot", kMath},
    {"ascend310b", "LogicalAnd", kMath},
    {"ascend310b", "LogicalOr", kMath},
    {"ascend310b", "GatherElements", kNN},
    {"ascend310b", "ScatterElements", kNN},
    {"ascend310b", "Conv2DBackpropInput", kNN},
    {"ascend310b", "MaxPoolV3", kNN},
    {"ascend310b", "ApplyMomentum", kNN},
    {"ascend310b", "ApplyAdamW", kNN},
    {"ascend310b", "Muls", kMath},
    {"ascend310b", "Adds", kMath},
    {"ascend310b", "Axpy", kMath},
    {"ascend310b", "Add", kMath},
    {"ascend310b", "Mul", kMath},
    {"ascend310b", "Sqrt", kMath},
    {"ascend310b", "Abs", kMath},
    {"ascend310b", "Reciprocal", kMath},
    {"ascend310b", "Relu", kNN},
    {"ascend310b", "Sigmoid", kNN},
    {"ascend310b", "Tanh", kMath},
    {"ascend310b", "Slice", kMath},
    {"ascend310b", "Identity", kMath},
    {"ascend310b", "Floor", kMath},  // the CANN EP's Floor, Ceil, Round, Erf
    {"ascend310b", "Ceil", kMath},
    {"ascend310b", "Round", kMath},
    {"ascend310b", "Erf", kMath},
    // Atlas inference products (Ascend 310P)
    {"ascend310p", "Exp", kMath},
    {"ascend310p", "Log", kMath},
    {"ascend310p", "Sqrt", kMath},
    {"ascend310p", "Tanh", kMath},
    {"ascend310p", "Adds", kMath},
    {"ascend310p", "Less", kMath},
    {"ascend310p", "TruncateDiv", kMath},
    {"ascend310p", "Div", kMath},  // the CANN EP's Div, Round, Erf
    {"ascend310p", "Round", kMath},
    {"ascend310p", "Erf", kMath},
    {"ascend310p", "CrossEntropyLoss", kNN},
    {"ascend310p", "CrossEntropyLossGrad", kNN},
    {"ascend310p", "GatherElements", kNN},
    {"ascend310p", "ScatterElements", kNN},
    // Atlas training products (Ascend 910)
    {"ascend910", "Exp", kMath},
    {"ascend910", "Log", kMath},
    {"ascend910", "CrossEntropyLoss", kNN},
    {"ascend910", "CrossEntropyLossGrad", kNN},
    {"ascend910", "GatherElements", kNN},
    {"ascend910", "ScatterElements", kNN},
    // Atlas A2 / A3 (910B, 910_93): the new GatherElements/ScatterElements are Ascend 950 only
    {"ascend910b", "GatherElements", kNN},
    {"ascend910b", "ScatterElements", kNN},
    {"ascend910_93", "GatherElements", kNN},
    {"ascend910_93", "ScatterElements", kNN},
};

}  // namespace

const char* SocFamily(const std::string& soc_name) {
  for (const Family& f : kFamilies) {
    if (soc_name.rfind(f.prefix, 0) == 0) return f.family;
  }
  return "";
}

const char* UnavailableReason(const std::string& soc_name, const char* op_type) {
  const char* family = SocFamily(soc_name);
  for (const Missing& m : kMissing) {
    if (std::strcmp(m.family, family) == 0 && std::strcmp(m.op_type, op_type) == 0) return m.source;
  }
  return nullptr;
}

const std::string& SocName(const AclApi& acl) {
  static std::once_flag once;
  static std::string* name = new std::string();  // never destroyed: kernels may read it at exit
  std::call_once(once, [&acl] {
    const char* soc = acl.GetSocName();
    if (soc != nullptr) *name = soc;
  });
  return *name;
}

OrtStatusPtr RequireOps(const AclApi& acl, const char* kernel, std::initializer_list<const char*> op_types) {
  const std::string& soc = SocName(acl);
  for (const char* op : op_types) {
    if (const char* source = UnavailableReason(soc, op)) {
      return MakeError(std::string(kernel) + " on CANN: the CANN op " + op + " is not available on " + soc + " (" +
                           SocFamily(soc) + "; " + source + "), and the kernel has no other exact route there",
                       ORT_NOT_IMPLEMENTED);
    }
  }
  return nullptr;
}

bool HasOps(const AclApi& acl, std::initializer_list<const char*> op_types) {
  const std::string& soc = SocName(acl);
  for (const char* op : op_types) {
    if (UnavailableReason(soc, op) != nullptr) return false;
  }
  return true;
}

}  // namespace ortops::cann

// For rewrite.placement (ctypes): why `op_type` is not available on `soc_name`, or NULL.
extern "C" __attribute__((visibility("default"))) const char* OrtOpsCannOpUnavailable(const char* soc_name,
                                                                                      const char* op_type) {
  return ortops::cann::UnavailableReason(soc_name != nullptr ? soc_name : "", op_type != nullptr ? op_type : "");
}
