// The registry behind harness/impls.h.
#include "harness/impls.h"

#include <algorithm>

namespace rpa {
namespace {
std::vector<ImplSpec>& registry() {
  static std::vector<ImplSpec> impls;
  return impls;
}
}  // namespace

ImplRegistration::ImplRegistration(std::string name, std::string description, ImplFn run) {
  registry().push_back({std::move(name), std::move(description), std::move(run)});
}

std::vector<ImplSpec> implementations() {
  auto all = registry();
  std::sort(all.begin(), all.end(), [](const ImplSpec& a, const ImplSpec& b) { return a.name < b.name; });
  return all;
}

const ImplSpec* find_implementation(const std::string& name) {
  for (const auto& s : registry())
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace rpa
