// peat info TRACE: header, records per kind and op, steps, sizes, codec ratio
// (encoded / raw bytes, the convention of every PEAT output and benchmark).
#include "tools/peat/commands.hpp"
#include "tools/peat/common.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace peat::cli {

namespace {

struct OpStats {
  uint64_t records = 0, fwd = 0, bwd = 0, opt = 0, other = 0, tensors = 0, raw = 0, encoded = 0;
};

// Codec ratio: encoded / raw bytes (0.25 = a quarter of the raw size).
double codec_ratio(uint64_t raw, uint64_t encoded) {
  return raw ? static_cast<double>(encoded) / static_cast<double>(raw) : 0.0;
}

void add_tensor_bytes(const peat::trace_reader& r, uint64_t rec, peat_trace_slot_t slot, uint64_t n, uint64_t& tensors,
                      uint64_t& raw, uint64_t& encoded) {
  for (uint64_t t = 0; t < n; ++t) {
    const peat_trace_tensor_info_t ti = checked("tensor info", [&] { return r.tensor_info(rec, slot, t); });
    ++tensors;
    raw += ti.raw_bytes;
    encoded += ti.encoded_bytes;
  }
}

// The header's tags in order; a tag the reader cannot give is left out.
std::vector<std::pair<const char*, const char*>> tags_of(const peat::trace_reader& r, const peat_trace_run_info_t& ri) {
  std::vector<std::pair<const char*, const char*>> out;
  for (uint64_t t = 0; t < ri.n_tags; ++t) failure([&] { out.push_back(r.tag(t)); });
  return out;
}

std::string mib(uint64_t bytes) {
  char b[64];
  std::snprintf(b, sizeof b, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return b;
}

int run(const std::string& path, bool json) {
  const peat::trace_reader r = open_trace(path);
  const peat_trace_run_info_t ri = checked(path, [&] { return r.run_info(); });
  const uint64_t n = checked(path, [&] { return r.record_count(); });
  uint64_t kinds[5] = {0, 0, 0, 0, 0};
  std::map<std::string, OpStats> ops;
  std::map<std::string, std::pair<uint64_t, double>> scalars;  // points, last value
  nlohmann::json checkpoints = nlohmann::json::array();
  uint64_t tensors = 0, raw = 0, encoded = 0;
  int64_t step_min = 0, step_max = -1;
  for (uint64_t i = 0; i < n; ++i) {
    const peat_trace_record_info_t info = record_info(r, i);
    if (info.kind >= 1 && info.kind <= 4) ++kinds[info.kind];
    if (i == 0 || info.step < step_min) step_min = info.step;
    if (i == 0 || info.step > step_max) step_max = info.step;
    if (info.kind == PEAT_TRACE_KIND_OP) {
      OpStats& s = ops[info.name];
      ++s.records;
      (info.phase == PEAT_PHASE_FORWARD    ? s.fwd
       : info.phase == PEAT_PHASE_BACKWARD ? s.bwd
       : info.phase == PEAT_PHASE_OPTIMIZER ? s.opt
                                            : s.other)++;
      uint64_t t0 = s.tensors, r0 = s.raw, e0 = s.encoded;
      add_tensor_bytes(r, i, PEAT_TRACE_SLOT_INPUT, info.n_inputs, s.tensors, s.raw, s.encoded);
      add_tensor_bytes(r, i, PEAT_TRACE_SLOT_OUTPUT, info.n_outputs, s.tensors, s.raw, s.encoded);
      tensors += s.tensors - t0, raw += s.raw - r0, encoded += s.encoded - e0;
    } else if (info.kind == PEAT_TRACE_KIND_CHECKPOINT) {
      uint64_t ct = 0, cr = 0, ce = 0;
      add_tensor_bytes(r, i, PEAT_TRACE_SLOT_CHECKPOINT, info.n_tensors, ct, cr, ce);
      tensors += ct, raw += cr, encoded += ce;
      checkpoints.push_back({{"name", info.name}, {"step", info.step}, {"tensors", ct}, {"raw_bytes", cr}});
    } else if (info.kind == PEAT_TRACE_KIND_SCALAR) {
      auto& s = scalars[info.name];
      ++s.first;
      s.second = info.value;
    }
  }
  const double ratio = codec_ratio(raw, encoded);
  std::error_code ec;
  const uint64_t file_bytes = std::filesystem::file_size(path, ec);
  if (json) {
    nlohmann::json j;
    j["schema_version"] = 1;
    j["command"] = "info";
    j["trace"] = path;
    j["format"] = std::to_string(ri.format_major) + "." + std::to_string(ri.format_minor);
    j["run"] = {{"framework", ri.framework}, {"device", ri.device}, {"vendor", ri.vendor},
                {"library_version", ri.library_version}, {"run_name", ri.run_name}, {"rank", ri.rank},
                {"world_size", ri.world_size}, {"created_unix_ns", ri.created_unix_ns}};
    nlohmann::json tags = nlohmann::json::object();
    for (const auto& [k, v] : tags_of(r, ri)) tags[k] = v;
    j["tags"] = tags;
    j["file_bytes"] = file_bytes;
    j["records"] = {{"total", n}, {"op", kinds[1]}, {"checkpoint", kinds[2]}, {"scalar", kinds[3]}, {"step", kinds[4]}};
    j["steps"] = {{"min", step_min}, {"max", step_max}};
    j["tensors"] = {{"count", tensors}, {"raw_bytes", raw}, {"encoded_bytes", encoded}, {"codec_ratio", json_number(ratio)}};
    nlohmann::json jops = nlohmann::json::array();
    for (const auto& [name, s] : ops)
      jops.push_back({{"name", name}, {"records", s.records}, {"forward", s.fwd}, {"backward", s.bwd}, {"optimizer", s.opt}, {"other", s.other},
                      {"tensors", s.tensors}, {"raw_bytes", s.raw}, {"encoded_bytes", s.encoded}});
    j["ops"] = jops;
    nlohmann::json js = nlohmann::json::array();
    for (const auto& [name, s] : scalars) js.push_back({{"name", name}, {"points", s.first}, {"last", json_number(s.second)}});
    j["scalars"] = js;
    j["checkpoints"] = checkpoints;
    // Strings a reader gives are valid UTF-8 (it refuses others); "replace"
    // keeps a dump from throwing whatever happens upstream.
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kOk;
  }
  std::printf("trace      %s (%s)\n", printable(path).c_str(), mib(file_bytes).c_str());
  std::printf("format     %u.%u, written by PEAT %s\n", ri.format_major, ri.format_minor,
              printable(ri.library_version).c_str());
  std::printf("run        %s, rank %d of %d, framework '%s', device '%s' (%s)\n",
              *ri.run_name ? printable(ri.run_name).c_str() : "(unnamed)", ri.rank, ri.world_size,
              printable(ri.framework).c_str(), printable(ri.device).c_str(), printable(ri.vendor).c_str());
  for (const auto& [k, v] : tags_of(r, ri))
    std::printf("tag        %s = %s\n", printable(k).c_str(), printable(v).c_str());
  std::printf("records    %llu: %llu op, %llu checkpoint, %llu scalar, %llu step marker\n", static_cast<unsigned long long>(n),
              static_cast<unsigned long long>(kinds[1]), static_cast<unsigned long long>(kinds[2]),
              static_cast<unsigned long long>(kinds[3]), static_cast<unsigned long long>(kinds[4]));
  if (step_max >= step_min)
    std::printf("steps      %lld .. %lld\n", static_cast<long long>(step_min), static_cast<long long>(step_max));
  std::printf("tensors    %llu, %s raw, %s encoded, codec ratio %.3f (encoded/raw)\n", static_cast<unsigned long long>(tensors),
              mib(raw).c_str(), mib(encoded).c_str(), ratio);
  for (const auto& [name, s] : scalars)
    std::printf("scalar     %s: %llu points, last %.6g\n", printable(name).c_str(), static_cast<unsigned long long>(s.first), s.second);
  for (const auto& c : checkpoints)
    std::printf("checkpoint %s at step %lld: %llu tensors\n", printable(c["name"].get<std::string>()).c_str(),
                static_cast<long long>(c["step"].get<int64_t>()), static_cast<unsigned long long>(c["tensors"].get<uint64_t>()));
  if (!ops.empty()) {
    // The op column is as wide as the longest (printable) name, so long
    // names do not push their numbers out of line.
    std::size_t width = 2;
    for (const auto& [name, s] : ops) width = std::max(width, printable(name).size());
    const int w = static_cast<int>(width);
    std::printf("\n%-*s %8s %6s %6s %6s %6s %8s %12s %12s %7s\n", w, "op", "records", "fwd", "bwd", "opt", "other",
                "tensors", "raw", "encoded", "ratio");
    for (const auto& [name, s] : ops)
      std::printf("%-*s %8llu %6llu %6llu %6llu %6llu %8llu %12s %12s %7.3f\n", w, printable(name).c_str(),
                  static_cast<unsigned long long>(s.records), static_cast<unsigned long long>(s.fwd),
                  static_cast<unsigned long long>(s.bwd), static_cast<unsigned long long>(s.opt),
                  static_cast<unsigned long long>(s.other), static_cast<unsigned long long>(s.tensors),
                  mib(s.raw).c_str(), mib(s.encoded).c_str(), codec_ratio(s.raw, s.encoded));
  }
  return kOk;
}

}  // namespace

Command add_info(CLI::App& app) {
  auto* sub = app.add_subcommand("info", "Header, records per kind and op, steps covered, sizes and codec ratio of a trace");
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  sub->add_option("TRACE", *path, "trace file")->required();
  sub->add_flag("--json", *json, "print one JSON object (docs/schemas/info.schema.json)");
  return {sub, [path, json] { return run(*path, *json); }};
}

}  // namespace peat::cli
