// Argument checks shared by the ops-nn BatchNorm V3 pair (norm/batch_norm_v3, norm/batch_norm_grad_v3): their
// defs' data tensors are 4-D NCHW or 5-D NCDHW (channels at axis 1), every other tensor 1-D [C].
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "op_call.h"

namespace aclsim {

// Each of `tensors` (named `names` in the error) 4-D with format NCHW or 5-D with NCDHW, else
// ACL_ERROR_FORMAT_NOT_MATCH saying which layouts of the def are `not_simulated`.
inline aclError expect_nchw_or_ncdhw(const char* op, std::initializer_list<const OpTensor*> tensors, const char* names,
                                     const char* not_simulated) {
  for (const OpTensor* t : tensors) {
    const bool ok =
        (t->format == ACL_FORMAT_NCHW && t->dims.size() == 4) || (t->format == ACL_FORMAT_NCDHW && t->dims.size() == 5);
    if (!ok)
      return fail(ACL_ERROR_FORMAT_NOT_MATCH,
                  "%s: %s must be 4-D with format NCHW (%d) or 5-D with format NCDHW (%d); got shape %s with format %d "
                  "(the def's formats; %s are not simulated)",
                  op, names, static_cast<int>(ACL_FORMAT_NCHW), static_cast<int>(ACL_FORMAT_NCDHW),
                  shape_str(t->dims).c_str(), static_cast<int>(t->format), not_simulated);
  }
  return ACL_SUCCESS;
}

// Inputs first_input.. and outputs 1.. of shape [channels] (names: the op's input and output names).
inline aclError expect_per_channel(const OpCall& c, size_t first_input, const char* const* input_names,
                                   const char* const* output_names, int64_t channels) {
  const std::vector<int64_t> per_channel{channels};
  for (size_t i = first_input; i < c.in.size(); ++i) {
    if (c.in[i].dims != per_channel)
      return fail(ACL_ERROR_OP_INPUT_NOT_MATCH, "%s: input %zu (%s) has shape %s, expected [%lld] (x's channels)",
                  c.type.c_str(), i, input_names[i], shape_str(c.in[i].dims).c_str(), static_cast<long long>(channels));
  }
  for (size_t o = 1; o < c.out.size(); ++o) {
    const std::string what = "output " + std::to_string(o) + " (" + output_names[o] + ")";
    if (aclError rc = expect_output_shape(c, o, what.c_str(), per_channel, "[C]")) return rc;
  }
  return ACL_SUCCESS;
}

}  // namespace aclsim
