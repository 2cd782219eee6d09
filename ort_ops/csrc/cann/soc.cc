// The SoC support table (see soc.h), compiled from ort_ops/cann_soc_table.json (the one table;
// CMake generates cann_soc_table.inc from it; docs/cann_ops.md, "SoC availability", cites each row).
#include "cann/soc.h"

#include <cstring>
#include <mutex>

namespace ortops::cann {
namespace {

const char* const kFamilies[] = {
#define CANN_FAMILY(index, name, product) name,
#include "cann_soc_table.inc"
};

struct OpSupport {
  const char* op_type;
  unsigned missing;        // bit i: not available on kFamilies[i]
  const char* readme_ref;  // "hicann/ops-nn README": the errors' source
};
const OpSupport kOpSupport[] = {
#define CANN_OP(type, missing, repo_at_commit, readme_ref, path, first_line, step) {type, missing, readme_ref},
#include "cann_soc_table.inc"
};

#define CANN_SOC_FAMILY_INDEX FamilyIndex
#include "cann_soc_table.inc"

}  // namespace

const char* SocFamily(const std::string& soc_name) {
  const int family = FamilyIndex(soc_name);
  return family < 0 ? "" : kFamilies[family];
}

const char* UnavailableReason(const std::string& soc_name, const char* op_type) {
  const int family = FamilyIndex(soc_name);
  if (family < 0) return nullptr;
  for (const OpSupport& s : kOpSupport) {
    if (std::strcmp(s.op_type, op_type) == 0) return (s.missing >> family) & 1u ? s.readme_ref : nullptr;
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

OrtStatusPtr RequireOps(const AclApi& acl, const char* kernel, const char* const* op_types, size_t count) {
  const std::string& soc = SocName(acl);
  for (size_t i = 0; i < count; ++i) {
    const char* op = op_types[i];
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
