// Parser of the interposers' environment (see config.hpp).
#include "backends/interpose/runtime/config.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace peat::interpose {

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string::size_type start = 0;
  while (true) {
    const auto pos = s.find(sep, start);
    parts.push_back(trim(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start)));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return parts;
}

// Where a value came from, for messages: "PEAT_INTERPOSE_FI policy 2, key 'every_n'".
struct Where {
  const char* variable;
  const char* what;  // "policy" or "rule"
  std::size_t entry; // 1-based
  std::string key;
  [[noreturn]] void fail(const std::string& why) const {
    throw ConfigError(std::string(variable) + " " + what + " " + std::to_string(entry) + ", key '" + key +
                      "': " + why);
  }
};

uint64_t to_u64(const std::string& v, const Where& w) {
  if (v.empty() || v[0] == '-') w.fail("'" + v + "' is not a non-negative integer");
  errno = 0;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v.c_str(), &end, 0);
  if (errno != 0 || end == v.c_str() || *end != '\0') w.fail("'" + v + "' is not a non-negative integer");
  return x;
}

int64_t to_i64(const std::string& v, const Where& w) {
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 0);
  if (v.empty() || errno != 0 || end == v.c_str() || *end != '\0') w.fail("'" + v + "' is not an integer");
  return x;
}

int32_t to_i32(const std::string& v, const Where& w) {
  const int64_t x = to_i64(v, w);
  if (x < INT32_MIN || x > INT32_MAX) w.fail("'" + v + "' is out of range");
  return static_cast<int32_t>(x);
}

double to_double(const std::string& v, const Where& w) {
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || errno != 0 || end == v.c_str() || *end != '\0') w.fail("'" + v + "' is not a number");
  return x;
}

// "a:b" step window; an empty b means no end (`open_end` is stored then).
void to_window(const std::string& v, const Where& w, int64_t& begin, int64_t& end, int64_t open_end) {
  const auto colon = v.find(':');
  if (colon == std::string::npos) w.fail("'" + v + "' is not a step window 'begin:end'");
  begin = colon == 0 ? 0 : to_i64(v.substr(0, colon), w);
  const std::string e = v.substr(colon + 1);
  end = e.empty() ? open_end : to_i64(e, w);
}

// A word from a fixed list, mapped to its enum value.
int32_t to_enum(const std::string& v, const Where& w, std::initializer_list<std::pair<const char*, int32_t>> names) {
  std::string known;
  for (const auto& [name, value] : names) {
    if (v == name) return value;
    known += known.empty() ? name : std::string(", ") + name;
  }
  w.fail("'" + v + "' is not one of " + known);
}

// key=value pairs of one entry, in order.
std::vector<std::pair<std::string, std::string>> pairs_of(const std::string& entry, const char* variable,
                                                          const char* what, std::size_t number) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& item : split(entry, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      Where{variable, what, number, item}.fail("expected key=value");
    out.emplace_back(trim(item.substr(0, eq)), trim(item.substr(eq + 1)));
  }
  return out;
}

// The error-model keys (peat_inject_spec_t fields). Returns false for a key
// that is not one of them.
bool spec_key(peat_inject_spec_t& s, const std::string& key, const std::string& v, const Where& w) {
  if (key == "count") s.count = to_i64(v, w);
  else if (key == "element_p") s.probability = to_double(v, w);
  else if (key == "bits") s.bits = to_i32(v, w);
  else if (key == "bit") s.bit = to_i32(v, w);
  else if (key == "adjacent") s.adjacent = to_i32(v, w);
  else if (key == "field")
    s.field = to_enum(v, w, {{"any", PEAT_BIT_FIELD_ANY}, {"sign", PEAT_BIT_FIELD_SIGN},
                             {"exponent", PEAT_BIT_FIELD_EXPONENT}, {"mantissa", PEAT_BIT_FIELD_MANTISSA}});
  else if (key == "stuck_value") s.stuck_value = to_i32(v, w);
  else if (key == "scope")
    s.scope = to_enum(v, w, {{"all", PEAT_STUCK_ALL}, {"lane", PEAT_STUCK_LANE}, {"region", PEAT_STUCK_REGION}});
  else if (key == "lane_period") s.lane_period = to_i32(v, w);
  else if (key == "lane") s.lane = to_i32(v, w);
  else if (key == "value") {
    if (v == "zero") s.value_kind = PEAT_VALUE_ZERO;
    else if (v == "random") s.value_kind = PEAT_VALUE_RANDOM;
    else if (v == "nan") s.value_kind = PEAT_VALUE_NAN;
    else if (v == "inf" || v == "+inf") s.value_kind = PEAT_VALUE_POS_INF;
    else if (v == "-inf") s.value_kind = PEAT_VALUE_NEG_INF;
    else {
      s.value_kind = PEAT_VALUE_CONSTANT;
      s.value = to_double(v, w);
    }
  } else if (key == "range") s.range = to_double(v, w);
  else if (key == "rows") s.rows = to_i64(v, w);
  else if (key == "cols") s.cols = to_i64(v, w);
  else if (key == "region")
    s.region = to_enum(v, w, {{"rows", PEAT_REGION_ROWS}, {"columns", PEAT_REGION_COLUMNS},
                              {"tiles", PEAT_REGION_TILES}, {"last_tile", PEAT_REGION_LAST_TILE},
                              {"remainder", PEAT_REGION_REMAINDER}});
  else if (key == "first") s.first = to_i64(v, w);
  else if (key == "extent") s.extent = to_i64(v, w);
  else if (key == "tile_rows") s.tile_rows = to_i64(v, w);
  else if (key == "tile_cols") s.tile_cols = to_i64(v, w);
  else if (key == "fill")
    s.fill = to_enum(v, w, {{"zeros", PEAT_FILL_ZEROS}, {"garbage", PEAT_FILL_GARBAGE},
                            {"stale", PEAT_FILL_STALE}, {"keep", PEAT_FILL_KEEP}});
  else if (key == "alpha") s.alpha = to_double(v, w);
  else if (key == "offset") s.offset = to_i64(v, w);
  else if (key == "format")
    s.format = to_enum(v, w, {{"bf16", PEAT_FORMAT_BF16}, {"fp16", PEAT_FORMAT_FP16}, {"tf32", PEAT_FORMAT_TF32},
                              {"fp8_e4m3", PEAT_FORMAT_FP8_E4M3}, {"fp8_e5m2", PEAT_FORMAT_FP8_E5M2}});
  else if (key == "rounding")
    s.rounding = to_enum(v, w, {{"nearest_even", PEAT_ROUND_NEAREST_EVEN}, {"truncate", PEAT_ROUND_TRUNCATE}});
  else if (key == "saturate") s.saturate = to_i32(v, w);
  else if (key == "ulp") s.ulp = to_i32(v, w);
  else if (key == "distribution")
    s.distribution = to_enum(v, w, {{"uniform", PEAT_ULP_UNIFORM}, {"fixed", PEAT_ULP_FIXED},
                                    {"normal", PEAT_ULP_NORMAL}});
  else return false;
  return true;
}

PolicyConfig parse_policy(const std::string& entry, const char* variable, std::size_t number) {
  PolicyConfig p;
  peat_injector_policy_init(&p.policy);
  const auto pairs = pairs_of(entry, variable, "policy", number);
  // The model comes first so the spec's defaults are those of its kind,
  // wherever "model=" stands in the entry.
  for (const auto& [key, value] : pairs) {
    if (key != "model") continue;
    const Where w{variable, "policy", number, key};
    peat_inject_kind_t kind = -1;
    std::string known;
    for (peat_inject_kind_t k = 0; k <= PEAT_INJECT_ULP_NOISE; ++k) {
      if (value == peat_inject_kind_name(k)) kind = k;
      known += std::string(known.empty() ? "" : ", ") + peat_inject_kind_name(k);
    }
    if (kind < 0) w.fail("'" + value + "' is not an error model (" + known + ")");
    peat_inject_spec_init(&p.spec, kind);
    p.has_model = true;
  }
  bool has_action = false;
  for (const auto& [key, value] : pairs) {
    const Where w{variable, "policy", number, key};
    if (key == "model") continue;
    if (key == "op") {
      if (value.empty()) w.fail("the op glob is empty");
      p.op = value;
    } else if (key == "action") {
      p.policy.action = to_enum(value, w, {{"run_candidate", PEAT_ACTION_RUN_CANDIDATE},
                                           {"candidate", PEAT_ACTION_RUN_CANDIDATE},
                                           {"run_both", PEAT_ACTION_RUN_BOTH},
                                           {"both", PEAT_ACTION_RUN_BOTH},
                                           {"inject", PEAT_ACTION_INJECT}});
      has_action = true;
    } else if (key == "every_n") p.policy.every_n = to_u64(value, w);
    else if (key == "phase_offset") p.policy.phase_offset = to_u64(value, w);
    else if (key == "p" || key == "probability") p.policy.probability = to_double(value, w);
    else if (key == "steps") to_window(value, w, p.policy.step_begin, p.policy.step_end, -1);
    else if (key == "first_calls") p.policy.first_calls = to_u64(value, w);
    else if (key == "max_firings") p.policy.max_firings = to_u64(value, w);
    else if (key == "candidate") {
      if (value.find(':') == std::string::npos) w.fail("'" + value + "' is not 'path/to/libx.so:symbol'");
      p.candidate = value;
    } else if (p.has_model && spec_key(p.spec, key, value, w)) {
      // an error-model field
    } else {
      peat_inject_spec_t probe;
      peat_inject_spec_init(&probe, PEAT_INJECT_BITFLIP);
      if (spec_key(probe, key, value, w)) w.fail("an error-model field needs model=<kind> in the same policy");
      w.fail("unknown key");
    }
  }
  const Where w{variable, "policy", number, "action"};
  if (!has_action) {
    // The action follows from what the policy names.
    if (p.has_model) p.policy.action = PEAT_ACTION_INJECT;
    else if (!p.candidate.empty()) p.policy.action = PEAT_ACTION_RUN_CANDIDATE;
    else w.fail("missing: give action=inject with model=..., or candidate=libx.so:symbol");
  }
  if (p.policy.action == PEAT_ACTION_INJECT && !p.has_model) w.fail("action inject needs model=<kind>");
  if (p.policy.action != PEAT_ACTION_INJECT && p.candidate.empty())
    w.fail(std::string("action ") + peat_action_name(p.policy.action) + " needs candidate=libx.so:symbol");
  return p;
}

RuleConfig parse_rule(const std::string& entry, const char* variable, std::size_t number) {
  RuleConfig r;
  peat_sample_rule_init(&r.rule);
  for (const auto& [key, value] : pairs_of(entry, variable, "rule", number)) {
    const Where w{variable, "rule", number, key};
    if (key == "op") {
      if (value.empty()) w.fail("the op glob is empty");
      r.op = value;
    } else if (key == "record") r.rule.record = to_i32(value, w);
    else if (key == "every_n") r.rule.every_n = to_u64(value, w);
    else if (key == "first_k") r.rule.first_k = to_u64(value, w);
    else if (key == "steps") to_window(value, w, r.rule.step_begin, r.rule.step_end, INT64_MAX);
    else w.fail("unknown key");
  }
  return r;
}

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

}  // namespace

std::vector<PolicyConfig> parse_policies(const std::string& text, const char* variable) {
  std::vector<PolicyConfig> out;
  std::size_t number = 0;
  for (const std::string& entry : split(text, ';'))
    if (!entry.empty()) out.push_back(parse_policy(entry, variable, ++number));
  if (out.empty()) throw ConfigError(std::string(variable) + " is set but holds no policy");
  return out;
}

std::vector<RuleConfig> parse_rules(const std::string& text, const char* variable) {
  std::vector<RuleConfig> out;
  std::size_t number = 0;
  for (const std::string& entry : split(text, ';'))
    if (!entry.empty()) out.push_back(parse_rule(entry, variable, ++number));
  return out;
}

Config read_config(const char* default_backend) {
  Config c;
  const char* master = env("PEAT_INTERPOSE");
  if (master != nullptr && (std::strcmp(master, "0") == 0 || std::strcmp(master, "off") == 0)) return c;
  const char* trace = env("PEAT_INTERPOSE_TRACE");
  const char* fi = env("PEAT_INTERPOSE_FI");
  const char* log = env("PEAT_INTERPOSE_LOG");
  if (trace == nullptr && fi == nullptr && log == nullptr) return c;  // nothing asked for
  const char* backend = env("PEAT_INTERPOSE_BACKEND");
  c.backend = backend != nullptr ? backend : default_backend;
  if (trace != nullptr) c.trace_path = trace;
  if (log != nullptr) c.log_path = log;
  if (fi != nullptr) {
    c.fi_text = fi;
    c.policies = parse_policies(fi, "PEAT_INTERPOSE_FI");
  }
  if (const char* sample = env("PEAT_INTERPOSE_SAMPLE")) c.rules = parse_rules(sample, "PEAT_INTERPOSE_SAMPLE");
  if (const char* seed = env("PEAT_INTERPOSE_SEED")) {
    c.seed = to_u64(seed, Where{"PEAT_INTERPOSE_SEED", "value", 1, "seed"});
    c.has_seed = true;
  }
  c.enabled = true;
  return c;
}

}  // namespace peat::interpose
