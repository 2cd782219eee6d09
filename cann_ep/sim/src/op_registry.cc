// The registry of op types the simulator implements: every ops/<stem>.cc's table (`<stem>_ops()`),
// collected through op_tables.inc, which CMake generates from the folder. docs/cann_ops.md has the
// full table and which ORT CANN EP kernel or ort_ops kernel sends each op type.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "op_call.h"

namespace aclsim {

#define ACLSIM_OP_FILE(stem) OpTable stem##_ops();
#include "op_tables.inc"
#undef ACLSIM_OP_FILE

namespace {

// Op type -> entry, built once (at the first launch, thread-safe); a type two files register is a
// build error in all but name, so it stops the process naming both.
const std::map<std::string, const KernelEntry*>& registry() {
  static const std::map<std::string, const KernelEntry*> table = [] {
    std::map<std::string, const KernelEntry*> out;
    auto add = [&out](OpTable t, const char* file) {
      for (size_t i = 0; i < t.count; ++i) {
        const KernelEntry& e = t.entries[i];
        if (!out.emplace(e.op_type, &e).second) {
          std::fprintf(stderr, "[aclsim] op type %s is registered twice (again by ops/%s.cc)\n", e.op_type, file);
          std::abort();
        }
      }
    };
#define ACLSIM_OP_FILE(stem) add(stem##_ops(), #stem);
#include "op_tables.inc"
#undef ACLSIM_OP_FILE
    return out;
  }();
  return table;
}

}  // namespace

const KernelEntry* find_kernel(const std::string& op_type) {
  const auto& table = registry();
  const auto it = table.find(op_type);
  return it == table.end() ? nullptr : it->second;
}

std::string kernel_names() {
  std::string s;
  for (const auto& [name, entry] : registry()) s += (s.empty() ? "" : ", ") + name;
  return s;
}

}  // namespace aclsim
