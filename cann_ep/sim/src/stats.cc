// Simulator counters (aclsimGetStat) and failure injection (aclsimFailNextOp).
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "aclsim.h"
#include "internal.h"
#include "injection.h"

namespace aclsim {
namespace {

std::atomic<int64_t> g_stats[kStatCount];

const char* const kStatNames[kStatCount] = {
    "live_allocations", "live_bytes", "peak_bytes", "total_allocations", "leaks_detected", "double_frees",
    "invalid_frees",    "overruns",   "errors",     "ops_launched",      "ops_executed",   "pageable_copies",
    "copies_h2d",       "copies_d2h", "copies_d2d", "stream_syncs",      "device_faults"};

// Executed ops per op type ("op:<type>" stats, aclsimOpCounts).
std::mutex g_op_mu;
std::map<std::string, int64_t> g_op_counts;

std::mutex g_inject_mu;
std::string g_inject_op;  // armed through aclsimFailNextOp
aclError g_inject_code = 0;
std::string g_fault_op;  // armed through aclsimFaultNextOp

aclError parse_code(const char* s) {
  if (s == nullptr || *s == '\0') return ACL_ERROR_RT_AICORE_EXCEPTION;
  long v = std::strtol(s, nullptr, 10);
  return v != 0 ? static_cast<aclError>(v) : ACL_ERROR_RT_AICORE_EXCEPTION;
}

}  // namespace

void stat_add(Stat s, int64_t delta) { g_stats[s].fetch_add(delta, std::memory_order_relaxed); }

void stat_max(Stat s, int64_t value) {
  int64_t cur = g_stats[s].load(std::memory_order_relaxed);
  while (value > cur && !g_stats[s].compare_exchange_weak(cur, value)) {
  }
}

void stat_op_executed(const char* op_type) {
  std::lock_guard<std::mutex> lock(g_op_mu);
  ++g_op_counts[op_type];
}

bool take_injected_failure(const char* op_type, aclError* code, std::string* source) {
  std::lock_guard<std::mutex> lock(g_inject_mu);
  if (!g_inject_op.empty() && (g_inject_op == "*" || g_inject_op == op_type)) {
    *code = g_inject_code;
    *source = "aclsimFailNextOp";
    g_inject_op.clear();
    return true;
  }
  // ACLSIM_FAIL_NEXT_OP=<op type>|*[:<error code>]; consumed (unset) once it fires, so
  // setting it again re-arms it.
  const char* env = std::getenv("ACLSIM_FAIL_NEXT_OP");
  if (env == nullptr || *env == '\0') return false;
  std::string spec(env);
  std::string op = spec.substr(0, spec.find(':'));
  if (op != "*" && op != op_type) return false;
  size_t colon = spec.find(':');
  *code = parse_code(colon == std::string::npos ? nullptr : spec.c_str() + colon + 1);
  *source = "ACLSIM_FAIL_NEXT_OP=" + spec;
  unsetenv("ACLSIM_FAIL_NEXT_OP");
  return true;
}

bool take_injected_fault(const char* op_type, std::string* source) {
  std::lock_guard<std::mutex> lock(g_inject_mu);
  if (!g_fault_op.empty() && (g_fault_op == "*" || g_fault_op == op_type)) {
    *source = "aclsimFaultNextOp";
    g_fault_op.clear();
    return true;
  }
  const char* env = std::getenv("ACLSIM_FAULT_NEXT_OP");  // <op type>|*, consumed once it fires
  if (env == nullptr || *env == '\0' || (std::strcmp(env, "*") != 0 && std::strcmp(env, op_type) != 0)) return false;
  *source = "ACLSIM_FAULT_NEXT_OP=" + std::string(env);
  unsetenv("ACLSIM_FAULT_NEXT_OP");
  return true;
}

}  // namespace aclsim

extern "C" {

int64_t aclsimGetStat(const char* name) {
  if (name == nullptr) return -1;
  if (std::strncmp(name, "op:", 3) == 0) {  // executed ops of one type (0 if none ran)
    std::lock_guard<std::mutex> lock(aclsim::g_op_mu);
    auto it = aclsim::g_op_counts.find(name + 3);
    return it == aclsim::g_op_counts.end() ? 0 : it->second;
  }
  for (int i = 0; i < aclsim::kStatCount; ++i) {
    if (std::strcmp(name, aclsim::kStatNames[i]) == 0) return aclsim::g_stats[i].load();
  }
  return -1;
}

void aclsimResetStats(void) {
  for (int i = 0; i < aclsim::kStatCount; ++i) {
    if (i == aclsim::kLiveAllocations || i == aclsim::kLiveBytes) continue;
    aclsim::g_stats[i].store(0);
  }
  std::lock_guard<std::mutex> lock(aclsim::g_op_mu);
  aclsim::g_op_counts.clear();
}

const char* aclsimOpCounts(void) {
  thread_local std::string out;
  std::lock_guard<std::mutex> lock(aclsim::g_op_mu);
  out.clear();
  for (const auto& kv : aclsim::g_op_counts)
    out += (out.empty() ? "" : ",") + kv.first + "=" + std::to_string(kv.second);
  return out.c_str();
}

void aclsimFailNextOp(const char* op_type, int32_t error_code) {
  std::lock_guard<std::mutex> lock(aclsim::g_inject_mu);
  aclsim::g_inject_op = op_type != nullptr ? op_type : "";
  aclsim::g_inject_code = error_code != 0 ? error_code : ACL_ERROR_RT_AICORE_EXCEPTION;
  ACLSIM_TRACE("aclsimFailNextOp(op_type=%s, error_code=%d)", op_type ? op_type : "NULL", error_code);
}

void aclsimFaultNextOp(const char* op_type) {
  std::lock_guard<std::mutex> lock(aclsim::g_inject_mu);
  aclsim::g_fault_op = op_type != nullptr ? op_type : "";
  ACLSIM_TRACE("aclsimFaultNextOp(op_type=%s)", op_type ? op_type : "NULL");
}

const char* aclsimVersion(void) { return "aclsim 0.1 (CPU simulator of the Ascend ACL runtime)"; }

}  // extern "C"
