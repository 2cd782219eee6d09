// Probing a node for attributes its op does not declare (attribute_check.h).
#include "common/attribute_check.h"

#include <algorithm>
#include <string>
#include <vector>

namespace ortops {
namespace {

// Whether the node has attribute `name`, of any type: the int64 lookup succeeds, or fails for
// another reason than absence (tensor_io.cc reads absence from the same message).
bool HasAttribute(const OrtKernelInfo* info, const std::string& name) {
  int64_t ignored = 0;
  OrtStatusPtr status = Api().KernelInfoGetAttribute_int64(info, name.c_str(), &ignored);
  if (status == nullptr) return true;
  const bool absent = std::string(Api().GetErrorMessage(status)).find("No attribute with") != std::string::npos;
  Api().ReleaseStatus(status);
  return !absent;
}

// `name` with one typo: adjacent characters swapped, one character dropped, one doubled.
void AddTypos(const std::string& name, std::vector<std::string>* out) {
  for (size_t i = 0; i + 1 < name.size(); ++i) {
    std::string swapped = name;
    std::swap(swapped[i], swapped[i + 1]);
    out->push_back(swapped);
  }
  for (size_t i = 0; i < name.size(); ++i) {
    out->push_back(name.substr(0, i) + name.substr(i + 1));
    out->push_back(name.substr(0, i + 1) + name.substr(i));
  }
}

std::string NodeName(const OrtKernelInfo* info) {
  size_t size = 0;
  OrtStatusPtr status = Api().KernelInfo_GetNodeName(info, nullptr, &size);
  if (status != nullptr) {
    Api().ReleaseStatus(status);
    return "";
  }
  std::string name(size, '\0');
  status = Api().KernelInfo_GetNodeName(info, name.data(), &size);
  if (status != nullptr) {
    Api().ReleaseStatus(status);
    return "";
  }
  name.resize(size > 0 ? size - 1 : 0);  // size counts the terminating null
  return name;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : ", ") + n;
  return text;
}

}  // namespace

OrtStatusPtr RejectUndeclaredAttributes(const OrtKernelInfo* info, const char* op,
                                        std::initializer_list<const char*> declared,
                                        std::initializer_list<const char*> foreign) {
  const std::vector<std::string> known(declared.begin(), declared.end());
  std::vector<std::string> candidates(foreign.begin(), foreign.end());
  for (const std::string& name : known) AddTypos(name, &candidates);
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  std::vector<std::string> found;
  for (const std::string& name : candidates) {
    if (std::find(known.begin(), known.end(), name) == known.end() && HasAttribute(info, name)) found.push_back(name);
  }
  if (found.empty()) return nullptr;
  return MakeError(std::string(op) + ": node '" + NodeName(info) + "' has attribute" + (found.size() > 1 ? "s " : " ") +
                   Joined(found) + ", which " + op +
                   " does not define (its attributes: " + (known.empty() ? std::string("none") : Joined(known)) + ")");
}

}  // namespace ortops
