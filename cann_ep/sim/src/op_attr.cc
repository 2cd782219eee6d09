// aclopAttr: single-op attributes.
#include <string>

#include "internal.h"
#include "tensor.h"

namespace {

aclError set(aclopAttr* attr, const char* name, aclopAttr::Value v, const char* api) {
  if (attr == nullptr || name == nullptr) return aclsim::fail(ACL_ERROR_INVALID_PARAM, "%s: attr or name is NULL", api);
  attr->values[name] = std::move(v);
  return ACL_SUCCESS;
}

aclopAttr::Value make(aclopAttr::Value::Kind k) {
  aclopAttr::Value v{};
  v.kind = k;
  return v;
}

}  // namespace

extern "C" {

ACL_FUNC_VISIBILITY aclopAttr* aclopCreateAttr() {
  aclopAttr* a = new aclopAttr();
  ACLSIM_TRACE("aclopCreateAttr() = %p", static_cast<void*>(a));
  return a;
}

ACL_FUNC_VISIBILITY void aclopDestroyAttr(const aclopAttr* attr) {
  ACLSIM_TRACE("aclopDestroyAttr(attr=%p)", static_cast<const void*>(attr));
  delete attr;
}

ACL_FUNC_VISIBILITY aclError aclopSetAttrBool(aclopAttr* attr, const char* attrName, uint8_t attrValue) {
  auto v = make(aclopAttr::Value::kBool);
  v.i = attrValue != 0;
  aclError rc = set(attr, attrName, v, "aclopSetAttrBool");
  ACLSIM_TRACE("aclopSetAttrBool(attr=%p, %s=%d) = %d", static_cast<void*>(attr), attrName ? attrName : "NULL",
               attrValue, rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclopSetAttrInt(aclopAttr* attr, const char* attrName, int64_t attrValue) {
  auto v = make(aclopAttr::Value::kInt);
  v.i = attrValue;
  aclError rc = set(attr, attrName, v, "aclopSetAttrInt");
  ACLSIM_TRACE("aclopSetAttrInt(attr=%p, %s=%lld) = %d", static_cast<void*>(attr), attrName ? attrName : "NULL",
               static_cast<long long>(attrValue), rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclopSetAttrFloat(aclopAttr* attr, const char* attrName, float attrValue) {
  auto v = make(aclopAttr::Value::kFloat);
  v.f = attrValue;
  aclError rc = set(attr, attrName, v, "aclopSetAttrFloat");
  ACLSIM_TRACE("aclopSetAttrFloat(attr=%p, %s=%.9g) = %d", static_cast<void*>(attr), attrName ? attrName : "NULL",
               static_cast<double>(attrValue), rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclopSetAttrString(aclopAttr* attr, const char* attrName, const char* attrValue) {
  auto v = make(aclopAttr::Value::kString);
  v.s = attrValue ? attrValue : "";
  aclError rc = set(attr, attrName, v, "aclopSetAttrString");
  ACLSIM_TRACE("aclopSetAttrString(attr=%p, %s=\"%s\") = %d", static_cast<void*>(attr), attrName ? attrName : "NULL",
               v.s.c_str(), rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclopSetAttrListInt(aclopAttr* attr, const char* attrName, int numValues,
                                                 const int64_t* values) {
  auto v = make(aclopAttr::Value::kListInt);
  aclError rc = ACL_SUCCESS;
  if (numValues < 0 || (numValues > 0 && values == nullptr)) {
    rc = aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclopSetAttrListInt: invalid values (numValues=%d)", numValues);
  } else {
    if (numValues > 0) v.list.assign(values, values + numValues);
    rc = set(attr, attrName, v, "aclopSetAttrListInt");
  }
  ACLSIM_TRACE("aclopSetAttrListInt(attr=%p, %s=%s) = %d", static_cast<void*>(attr), attrName ? attrName : "NULL",
               aclsim::shape_str(v.list).c_str(), rc);
  return rc;
}

}  // extern "C"
