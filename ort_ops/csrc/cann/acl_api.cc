// Lazy dlopen/dlsym of the ACL functions.
#include "cann/acl_api.h"

#include <dlfcn.h>

#include <mutex>

namespace ortops::cann {
namespace {

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* out, std::string* error) {
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    *error = std::string("symbol ") + name + " not found in the ACL runtime";
    return false;
  }
  *out = reinterpret_cast<Fn>(symbol);
  return true;
}

void* Open(const char* soname, std::string* error) {
  void* handle = dlopen(soname, RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    *error =
        std::string("cannot load ") + soname + " (CANN runtime): " + (reason != nullptr ? reason : "unknown error");
  }
  return handle;
}

}  // namespace

const AclApi* GetAcl(std::string* error) {
  static std::once_flag once;
  static AclApi api;
  static bool loaded = false;
  static std::string load_error;
  std::call_once(once, [] {
    void* rt = Open("libascendcl.so", &load_error);
    if (rt == nullptr) return;
    void* compiler = Open("libacl_op_compiler.so", &load_error);
    if (compiler == nullptr) return;
    std::string& e = load_error;
    loaded =
        Resolve(rt, "aclCreateTensorDesc", &api.CreateTensorDesc, &e) &&
        Resolve(rt, "aclDestroyTensorDesc", &api.DestroyTensorDesc, &e) &&
        Resolve(rt, "aclCreateDataBuffer", &api.CreateDataBuffer, &e) &&
        Resolve(rt, "aclDestroyDataBuffer", &api.DestroyDataBuffer, &e) &&
        Resolve(rt, "aclopCreateAttr", &api.CreateAttr, &e) && Resolve(rt, "aclopDestroyAttr", &api.DestroyAttr, &e) &&
        Resolve(rt, "aclopSetAttrInt", &api.SetAttrInt, &e) &&
        Resolve(rt, "aclopSetAttrFloat", &api.SetAttrFloat, &e) &&
        Resolve(rt, "aclopSetAttrBool", &api.SetAttrBool, &e) &&
        Resolve(rt, "aclopSetAttrListInt", &api.SetAttrListInt, &e) &&
        Resolve(rt, "aclopSetAttrString", &api.SetAttrString, &e) &&
        Resolve(rt, "aclSetTensorConst", &api.SetTensorConst, &e) &&
        Resolve(rt, "aclrtSynchronizeStream", &api.SynchronizeStream, &e) &&
        Resolve(rt, "aclrtMemcpyAsync", &api.MemcpyAsync, &e) &&
        Resolve(rt, "aclrtMemsetAsync", &api.MemsetAsync, &e) && Resolve(rt, "aclrtGetSocName", &api.GetSocName, &e) &&
        Resolve(rt, "aclGetRecentErrMsg", &api.GetRecentErrMsg, &e) &&
        Resolve(compiler, "aclopCompileAndExecute", &api.CompileAndExecute, &e);
  });
  if (!loaded) {
    *error = load_error;
    return nullptr;
  }
  return &api;
}

}  // namespace ortops::cann
