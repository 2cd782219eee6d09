// The dtype rows the ops-nn norm backward defs list (norm/layer_norm_grad_v3/op_host/
// layer_norm_grad_v3_def.cpp, norm/batch_norm_grad_v3/op_host/batch_norm_grad_v3_def.cpp), as
// (data, parameter, other) where data is dy = x = the data gradient, parameter the scale (gamma /
// weight) and other the row's third type (LayerNormGradV3's pd_gamma, BatchNormGradV3's running
// statistics): (f32, f32, f32); (f16 or bf16, f32, f32); (f16 or bf16, same, same or f32).
#pragma once

#include "tensor.h"

namespace aclsim {

inline bool norm_grad_dtype_row(aclDataType data, aclDataType parameter, aclDataType other) {
  if (data == ACL_FLOAT) return parameter == ACL_FLOAT && other == ACL_FLOAT;
  if (data != ACL_FLOAT16 && data != ACL_BF16) return false;
  if (parameter == ACL_FLOAT) return other == ACL_FLOAT;
  return parameter == data && (other == data || other == ACL_FLOAT);
}

}  // namespace aclsim
