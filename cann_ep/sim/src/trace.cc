// ACLSIM_TRACE: "1" or "stderr" logs every ACL call to stderr, any other value is a file
// path to append to. One line per call: "[aclsim] <thread> <call>(<args>) = <result>".
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <thread>

#include "internal.h"

namespace aclsim {
namespace {

struct TraceSink {
  std::mutex mu;
  FILE* out = nullptr;
  bool owns = false;
  TraceSink() {
    const char* v = std::getenv("ACLSIM_TRACE");
    if (v == nullptr || *v == '\0' || std::strcmp(v, "0") == 0) return;
    if (std::strcmp(v, "1") == 0 || std::strcmp(v, "stderr") == 0) {
      out = stderr;
    } else if (std::strcmp(v, "stdout") == 0) {
      out = stdout;
    } else {
      out = std::fopen(v, "a");
      owns = out != nullptr;
      if (out == nullptr) std::fprintf(stderr, "[aclsim] warning: cannot open ACLSIM_TRACE file %s\n", v);
    }
  }
  ~TraceSink() {
    if (owns) std::fclose(out);
  }
};

TraceSink& sink() {
  static TraceSink* s = new TraceSink();  // never destroyed: calls may trace during exit
  return *s;
}

}  // namespace

bool trace_on() { return sink().out != nullptr; }

void trace(const char* fmt, ...) {
  TraceSink& s = sink();
  if (s.out == nullptr) return;
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  std::ostringstream tid;
  tid << std::this_thread::get_id();
  std::lock_guard<std::mutex> lock(s.mu);
  std::fprintf(s.out, "[aclsim] %s %s\n", tid.str().c_str(), buf);
  std::fflush(s.out);
}

const char* dtype_name(aclDataType t) {
  switch (t) {
    case ACL_FLOAT: return "ACL_FLOAT";
    case ACL_FLOAT16: return "ACL_FLOAT16";
    case ACL_BF16: return "ACL_BF16";
    case ACL_DOUBLE: return "ACL_DOUBLE";
    case ACL_INT8: return "ACL_INT8";
    case ACL_INT16: return "ACL_INT16";
    case ACL_INT32: return "ACL_INT32";
    case ACL_INT64: return "ACL_INT64";
    case ACL_UINT8: return "ACL_UINT8";
    case ACL_UINT16: return "ACL_UINT16";
    case ACL_UINT32: return "ACL_UINT32";
    case ACL_UINT64: return "ACL_UINT64";
    case ACL_BOOL: return "ACL_BOOL";
    case ACL_STRING: return "ACL_STRING";
    case ACL_DT_UNDEFINED: return "ACL_DT_UNDEFINED";
    default: return "ACL_DTYPE_OTHER";
  }
}

}  // namespace aclsim
