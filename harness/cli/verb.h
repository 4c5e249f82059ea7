// How a CLI verb registers itself: each harness/cli/verb_*.cc defines one static VerbRegistration.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace rpa::cli {

// Adds the verb's options to `sub` and returns what runs it (its exit code).
using VerbSetup = std::function<std::function<int()>(CLI::App& sub)>;

struct VerbSpec {
  std::string name;
  std::string description;
  VerbSetup setup;
};

std::vector<VerbSpec>& verb_registry();

struct VerbRegistration {
  VerbRegistration(std::string name, std::string description, VerbSetup setup) {
    verb_registry().push_back({std::move(name), std::move(description), std::move(setup)});
  }
};

// Exit codes shared by every verb.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;  // divergences, bound exceeded
inline constexpr int kExitBadInput = 2;  // malformed input, usage errors

}  // namespace rpa::cli
