// What the generated declaration of an op of ort_ops/ops/ (build dir: declared/<op>.h, from the
// op's `OP = OpDef(...)` by scripts/gen_op_declarations.py) builds on. The declaration is the
// only place the op's name, inputs and outputs, their types, the attributes with kinds and
// defaults, the probed foreign attributes and the providers are written; it provides
//   struct Declaration {
//     kName, kSource, kInputs, kOutputs, InputNames(), OutputNames();
//     struct Attributes;                                 the declared attributes, with defaults
//     static OrtStatusPtr ReadAttributes(info, &a);      undeclared-attribute check, then each read
//     using Types = TypeCodes<...>;                      the dtypes of T, one kernel variant each
//     kOnCpu, kOnCann; InputSpecs(t), OutputSpecs(t);    providers; every I/O's IoSpec for T = t
//   };
// The op's header (ops/<op>/<op>.h) includes it and adds what is the op's own: checks of the
// attribute values and values derived from them. Its kernel files register with
//   list.AddDeclared<Declaration, CpuKernel>();   (common/declared_op.h)
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

#include "common/attribute_check.h"
#include "common/declared_op.h"
#include "common/tensor_io.h"

namespace ortops {

// An attribute value as OrtOpsDeclarations() prints it: floats shortest round-trip, lists
// separated by ';'.
inline std::string DeclaredValueText(float value) {
  char text[32];
  const std::to_chars_result printed = std::to_chars(text, text + sizeof text, value);
  return std::string(text, printed.ptr);
}
inline std::string DeclaredValueText(int64_t value) { return std::to_string(value); }
inline std::string DeclaredValueText(const std::string& value) { return value; }
template <typename V>
std::string DeclaredValueText(const std::vector<V>& values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ";" : "") + DeclaredValueText(values[i]);
  return text;
}

// "<inputs> <outputs>" of a declared op for OrtOpsDeclarations(): each "name[?][@host]:type"
// with type "T" or an ONNX element type code (?: optional, @host: read in CPU memory).
template <typename Decl>
std::string DeclaredIoText() {
  // A code T never takes (UNDEFINED) shows which tensors follow T.
  const ONNXTensorElementDataType probe = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  auto list = [probe](const std::vector<const char*>& names, const std::vector<IoSpec>& specs) {
    std::string text;
    for (size_t i = 0; i < specs.size(); ++i) {
      text += std::string(i ? "," : "") + (i < names.size() ? names[i] : "?") + (specs[i].optional ? "?" : "") +
              (specs[i].on_cpu ? "@host" : "") + ":" +
              (specs[i].type == probe ? std::string("T") : std::to_string(static_cast<int>(specs[i].type)));
    }
    return text.empty() ? std::string("-") : text;
  };
  return list(Decl::InputNames(), Decl::InputSpecs(probe)) + " " + list(Decl::OutputNames(), Decl::OutputSpecs(probe));
}

}  // namespace ortops
