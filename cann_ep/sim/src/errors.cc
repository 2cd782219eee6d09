// The per-thread "recent error message" of aclGetRecentErrMsg, and error reporting.
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>

#include "internal.h"

namespace aclsim {
namespace {

struct ThreadErrors {
  bool pending = false;
  std::string message;   // set by the last failure, cleared by aclGetRecentErrMsg
  std::string returned;  // keeps the last returned string alive for the caller
};

ThreadErrors& thread_errors() {
  thread_local ThreadErrors e;
  return e;
}

std::string vformat(const char* fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap2);
  va_end(ap2);
  std::string s(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(&s[0], s.size() + 1, fmt, ap);
  return s;
}

std::mutex& stderr_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

aclError fail_msg(aclError code, const std::string& msg) {
  ThreadErrors& e = thread_errors();
  e.pending = true;
  e.message = "[aclsim] error " + std::to_string(code) + ": " + msg;
  stat_add(kErrors, 1);
  {
    std::lock_guard<std::mutex> lock(stderr_mutex());
    std::fprintf(stderr, "%s\n", e.message.c_str());
    std::fflush(stderr);
  }
  ACLSIM_TRACE("  !! error %d: %s", code, msg.c_str());
  return code;
}

aclError fail(aclError code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  return fail_msg(code, msg);
}

void warn(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  std::lock_guard<std::mutex> lock(stderr_mutex());
  std::fprintf(stderr, "[aclsim] warning: %s\n", msg.c_str());
  std::fflush(stderr);
}

}  // namespace aclsim

extern "C" ACL_FUNC_VISIBILITY const char* aclGetRecentErrMsg() {
  // NULL when nothing failed on this thread since the previous call: the ORT CANN EP
  // treats a non-null result after a successful kernel as a failure.
  aclsim::ThreadErrors& e = aclsim::thread_errors();
  if (!e.pending) {
    ACLSIM_TRACE("aclGetRecentErrMsg() = NULL");
    return nullptr;
  }
  e.returned.swap(e.message);
  e.message.clear();
  e.pending = false;
  ACLSIM_TRACE("aclGetRecentErrMsg() = \"%s\"", e.returned.c_str());
  return e.returned.c_str();
}
