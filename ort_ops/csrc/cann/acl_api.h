// The ACL (CANN runtime) functions the CANN kernels call, resolved lazily with dlopen so the
// library loads and its CPU kernels work on machines without CANN.
#pragma once

#include <acl/acl.h>
#include <acl/acl_op_compiler.h>

#include <string>

namespace ortops::cann {

struct AclApi {
  decltype(&aclCreateTensorDesc) CreateTensorDesc;
  decltype(&aclDestroyTensorDesc) DestroyTensorDesc;
  decltype(&aclCreateDataBuffer) CreateDataBuffer;
  decltype(&aclDestroyDataBuffer) DestroyDataBuffer;
  decltype(&aclopCreateAttr) CreateAttr;
  decltype(&aclopDestroyAttr) DestroyAttr;
  decltype(&aclopSetAttrInt) SetAttrInt;
  decltype(&aclopSetAttrFloat) SetAttrFloat;
  decltype(&aclopSetAttrBool) SetAttrBool;
  decltype(&aclopSetAttrListInt) SetAttrListInt;
  decltype(&aclopSetAttrString) SetAttrString;
  decltype(&aclSetTensorConst) SetTensorConst;
  decltype(&aclrtSynchronizeStream) SynchronizeStream;
  decltype(&aclrtMemcpyAsync) MemcpyAsync;
  decltype(&aclrtMemsetAsync) MemsetAsync;
  decltype(&aclrtGetSocName) GetSocName;
  decltype(&aclGetRecentErrMsg) GetRecentErrMsg;
  decltype(&aclopCompileAndExecute) CompileAndExecute;
};

// The ACL functions, loaded on first use from libascendcl.so and libacl_op_compiler.so (the
// ones already in the process — the CANN EP's, real or simulated — when present). nullptr when
// they cannot be loaded; `error` then says why.
const AclApi* GetAcl(std::string* error);

}  // namespace ortops::cann
