// Which CANN single ops the Ascend SoC this process runs on provides.
//
// CANN registers each operator for a list of products (the "产品支持情况" tables of the operator
// READMEs in hicann/ops-nn and hicann/ops-math), written once in ort_ops/cann_soc_table.json, which
// the build compiles in (and docs/cann_ops.md shows, citing each row). The kernels read
// the SoC once (aclrtGetSocName) and check at kernel creation that every op they will launch is
// available there: a missing op fails session creation naming the SoC and the op, never a run.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>

#include "cann/acl_api.h"
#include "common/ort_api.h"

namespace ortops::cann {

// The product family of a SoC name ("Ascend910B1" -> "ascend910b"); "" for names it does not know.
const char* SocFamily(const std::string& soc_name);

// Why `op_type` is not available on `soc_name` (the README that says so), or nullptr if it is
// (unknown SoCs: everything is assumed available).
const char* UnavailableReason(const std::string& soc_name, const char* op_type);

// The SoC of this process (read once; "" if the runtime does not say).
const std::string& SocName(const AclApi& acl);

// nullptr if every op of `op_types` is available on this SoC; else an error naming `kernel`, the SoC,
// the first op missing and the reason.
OrtStatusPtr RequireOps(const AclApi& acl, const char* kernel, const char* const* op_types, size_t count);
inline OrtStatusPtr RequireOps(const AclApi& acl, const char* kernel, std::initializer_list<const char*> op_types) {
  return RequireOps(acl, kernel, op_types.begin(), op_types.size());
}
// Whether every op of `op_types` is available on this SoC.
bool HasOps(const AclApi& acl, std::initializer_list<const char*> op_types);

}  // namespace ortops::cann
