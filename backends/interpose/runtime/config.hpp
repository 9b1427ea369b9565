// Configuration of the library interposers, read once from the environment.
// The grammar of PEAT_INTERPOSE_FI and PEAT_INTERPOSE_SAMPLE is documented in
// backends/interpose/README.md; this parser only fills the public option
// structs of peat/injector.h and peat/profiler.h, whose own checks (run when
// the policies and rules are added) name any field that is out of range.
#pragma once

#include <peat/injector.h>
#include <peat/profiler.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace peat::interpose {

// A configuration the interposer refuses; what() names the variable, the
// entry (1-based) and the key.
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One injector policy of PEAT_INTERPOSE_FI.
struct PolicyConfig {
  std::string op = "*";            // glob over entry-point names
  std::string candidate;           // "libx.so:symbol" (run_candidate / run_both)
  peat_injector_policy_t policy{}; // op_pattern and spec are filled in when added
  peat_inject_spec_t spec{};       // the error model of an inject policy
  bool has_model = false;
};

// One sampling rule of PEAT_INTERPOSE_SAMPLE.
struct RuleConfig {
  std::string op = "*";
  peat_sample_rule_t rule{};       // op_glob is filled in when added
};

struct Config {
  bool enabled = false;            // false: every call passes straight through
  std::string backend;             // session backend ("cuda", "hip", "cpu")
  std::string trace_path;          // PEAT_INTERPOSE_TRACE ("" = no profiler)
  std::string log_path;            // PEAT_INTERPOSE_LOG ("" = stderr for problems only)
  std::string fi_text;             // PEAT_INTERPOSE_FI as given
  uint64_t seed = 0;
  bool has_seed = false;
  std::vector<PolicyConfig> policies;
  std::vector<RuleConfig> rules;
};

// Parses a policy list ("key=value,...;key=value,...") as PEAT_INTERPOSE_FI.
// Throws ConfigError naming `variable`, the policy number and the key.
std::vector<PolicyConfig> parse_policies(const std::string& text, const char* variable);

// Parses a sampling rule list as PEAT_INTERPOSE_SAMPLE. Throws ConfigError.
std::vector<RuleConfig> parse_rules(const std::string& text, const char* variable);

// Reads every PEAT_INTERPOSE_* variable. `default_backend` is the session
// backend when PEAT_INTERPOSE_BACKEND is unset. Throws ConfigError.
Config read_config(const char* default_backend);

}  // namespace peat::interpose
