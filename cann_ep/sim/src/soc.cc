// The SoC support matrix: SoC name -> family, and the op types a family's CANN does not claim.
// aclopCompileAndExecute refuses those with ACL_ERROR_OP_NOT_FOUND (op_execute.cc).
//
// Compiled from ort_ops/cann_soc_table.json (the one table, which the op library compiles in too;
// CMake generates cann_soc_table.inc from it). Families follow CANN's own SoC -> short-SoC map;
// availability is the product table of each op's README (or aclnn doc) in hicann/ops-nn /
// hicann/ops-math: an op is unavailable on a family whose row is marked x / 不支持. Unknown SoC
// names, and op types the table does not list: every op type is available.
#include <cstring>
#include <string>

#include "aclsim.h"
#include "internal.h"

namespace aclsim {
namespace {

struct FamilyInfo {
  const char* name;     // CANN's short SoC name
  const char* product;  // the README row (in English)
};
const FamilyInfo kFamilies[] = {
#define CANN_FAMILY(index, name, product) {name, product},
#include "cann_soc_table.inc"
};

struct OpSupport {
  const char* op_type;
  unsigned missing;  // bit i: kFamilies[i]'s row is marked x / 不支持
  const char* repo;  // "hicann/ops-nn@e5c3fa93"
  const char* path;
  int first_line;  // the row of kFamilies[0]; family i's is first_line + i * step
  int step;
};
const OpSupport kOpSupport[] = {
#define CANN_OP(type, missing, repo_at_commit, readme_ref, path, first_line, step) \
  {type, missing, repo_at_commit, path, first_line, step},
#include "cann_soc_table.inc"
};

// SoC name -> index into kFamilies, or -1: exact names first, then prefixes.
#define CANN_SOC_FAMILY_INDEX family_of
#include "cann_soc_table.inc"

}  // namespace

const char* soc_family() {
  const int f = family_of(soc_name());
  return f < 0 ? "unknown" : kFamilies[f].name;
}

std::string soc_op_unavailable(const char* op_type) {
  const std::string soc = soc_name();
  const int f = family_of(soc);
  if (f < 0 || op_type == nullptr) return "";
  for (const OpSupport& s : kOpSupport) {
    if (std::strcmp(s.op_type, op_type) != 0 || ((s.missing >> f) & 1u) == 0) continue;
    const FamilyInfo& family = kFamilies[f];
    return "op type " + std::string(op_type) + " is not available on SoC " + soc + " (" + family.name + "): " + s.repo +
           ":" + s.path + ":" + std::to_string(s.first_line + f * s.step) + " marks \"" + family.product +
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
