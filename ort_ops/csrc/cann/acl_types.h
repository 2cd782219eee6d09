// ACL data types of the library's element types.
#pragma once

#include <acl/acl.h>

#include "common/element_type.h"

namespace ortops::cann {

template <typename T>
constexpr aclDataType kAclType = ACL_FLOAT;
template <>
constexpr aclDataType kAclType<Float16> = ACL_FLOAT16;
template <>
constexpr aclDataType kAclType<BFloat16> = ACL_BF16;

}  // namespace ortops::cann
