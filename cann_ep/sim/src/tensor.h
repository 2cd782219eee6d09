// Definitions of the opaque ACL descriptor types (the headers only forward-declare them).
#pragma once
#include <acl/acl.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "internal.h"

struct aclTensorDesc {
  aclDataType dtype = ACL_DT_UNDEFINED;
  aclFormat format = ACL_FORMAT_ND;
  std::vector<int64_t> dims;
  bool is_const = false;
  std::vector<unsigned char> const_data;  // aclSetTensorConst
};

struct aclDataBuffer {
  void* data;
  size_t size;
};

struct aclopAttr {
  struct Value {
    enum Kind { kBool, kInt, kFloat, kString, kListInt } kind;
    int64_t i = 0;
    float f = 0.0f;
    std::string s;
    std::vector<int64_t> list;
  };
  std::map<std::string, Value> values;
};

namespace aclsim {
ACLSIM_INTERNAL size_t dtype_size(aclDataType t);
ACLSIM_INTERNAL std::string shape_str(const std::vector<int64_t>& dims);
}  // namespace aclsim
