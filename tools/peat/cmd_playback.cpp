// peat playback TRACE --candidate LIB.so:SYMBOL: playback FI with a progress
// bar on a terminal and the verdict table at the end (or --json / --csv).
#include "commands.hpp"
#include "common.hpp"
#include "replay.hpp"
#include "verdicts.hpp"

#include <cstdio>
#include <iostream>
#include <memory>

namespace peat_cli {

namespace {

struct Options {
  std::string trace, candidate, op_glob, steps, jsonl;
  int repeat = 1, jobs = 1;
  bool json = false, csv_out = false;
};

// "A:B", "A:", ":B" or "A" (inclusive).
void parse_steps(const std::string& text, ReplayOptions& o) {
  if (text.empty()) return;
  const auto colon = text.find(':');
  const auto num = [&](const std::string& s, int64_t fallback) -> int64_t {
    if (s.empty()) return fallback;
    std::size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(s, &used);
    } catch (...) {
      used = 0;
    }
    if (used != s.size()) throw CliError(kUsage, "--steps '" + text + "': expected A:B with integer steps");
    return v;
  };
  if (colon == std::string::npos) {
    o.step_min = o.step_max = num(text, 0);
  } else {
    o.step_min = num(text.substr(0, colon), INT64_MIN);
    o.step_max = num(text.substr(colon + 1), INT64_MAX);
  }
  if (o.step_max < o.step_min) throw CliError(kUsage, "--steps '" + text + "': the range is empty (B < A)");
}

int run(const Options& opt) {
  ReplayOptions ro;
  ro.candidate = opt.candidate;
  ro.op_glob = opt.op_glob;
  ro.run_twice = opt.repeat == 2;
  ro.jobs = opt.jobs;
  ro.progress = stderr_is_tty() && !opt.json && !opt.csv_out;
  parse_steps(opt.steps, ro);
  TraceReader reader = open_trace(opt.trace);
  Replay replay(reader.get(), opt.trace, ro);
  if (!opt.jsonl.empty()) check(peat_playback_write_jsonl(replay.playback(), opt.jsonl.c_str(), 0), opt.jsonl);
  const auto& s = replay.summary();
  const bool findings = replay.findings();
  if (opt.json) {
    nlohmann::json j;
    j["schema_version"] = 1;
    j["command"] = "playback";
    j["trace"] = opt.trace;
    j["candidate"] = opt.candidate;
    j["repeat"] = opt.repeat;
    j["summary"] = {{"selected", s.selected}, {"done", s.done},   {"ok", s.ok},
                    {"failed", s.failed},     {"exact", s.exact}, {"mismatched", s.mismatched},
                    {"nondeterministic", s.nondeterministic}};
    nlohmann::json ops = nlohmann::json::array();
    for (const OpVerdict& v : replay.ops()) {
      nlohmann::json o = signature_json(v.signature);
      o["op"] = v.op;
      o["output"] = v.output;
      o["output_name"] = v.output_name;
      o["records"] = v.group.records;
      o["ok"] = v.group.ok;
      o["failed"] = v.group.failed;
      o["exact"] = v.group.exact;
      o["nondeterministic"] = v.group.nondeterministic;
      o["verdicts"] = verdicts_json(v.detection, v.detected);
      nlohmann::json counts = nlohmann::json::object();
      for (int m = 0; m < PEAT_PLAYBACK_MODEL_SLOTS; ++m)
        if (v.per_call.counts[m] != 0) counts[peat_error_model_name(m)] = v.per_call.counts[m];
      const nlohmann::json bits = bits_of(v.per_call.bits);
      o["per_call"] = {{"records", v.per_call.records},
                       {"judged", v.per_call.judged},
                       {"top", v.per_call.top_model >= 0 ? peat_error_model_name(v.per_call.top_model) : ""},
                       {"counts", counts},
                       {"bits", bits}};
      if (!v.detect_error.empty()) o["detector_error"] = v.detect_error;
      ops.push_back(std::move(o));
    }
    j["ops"] = ops;
    j["findings"] = findings;
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";  // see cmd_info
  } else if (opt.csv_out) {
    std::printf("op,output,records,ok,failed,exact,nondeterministic,elements,bitwise_mismatches,tolerance_failures,"
                "max_abs_error,max_rel_error,relative_l2,verdict,confidence\n");
    for (const OpVerdict& v : replay.ops()) {
      const bool has = v.detected && v.detection.verdict_count > 0;
      std::printf("%s,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.9g,%.9g,%.9g,%s,%.4f\n", csv(v.op).c_str(),
                  static_cast<unsigned long long>(v.output), static_cast<unsigned long long>(v.group.records),
                  static_cast<unsigned long long>(v.group.ok), static_cast<unsigned long long>(v.group.failed),
                  static_cast<unsigned long long>(v.group.exact), static_cast<unsigned long long>(v.group.nondeterministic),
                  static_cast<unsigned long long>(v.signature.count),
                  static_cast<unsigned long long>(v.signature.bitwise_mismatch_count),
                  static_cast<unsigned long long>(v.signature.tolerance_fail_count), v.signature.max_abs_error,
                  v.signature.max_rel_error, relative_l2(v.signature),
                  has ? peat_error_model_name(v.detection.verdicts[0].model) : "", has ? v.detection.verdicts[0].confidence : 0.0);
    }
  } else {
    std::printf("%s with %s: %llu records, %llu ok, %llu failed, %llu exact, %llu mismatched, %llu nondeterministic\n\n",
                opt.trace.c_str(), opt.candidate.c_str(), static_cast<unsigned long long>(s.done),
                static_cast<unsigned long long>(s.ok), static_cast<unsigned long long>(s.failed),
                static_cast<unsigned long long>(s.exact), static_cast<unsigned long long>(s.mismatched),
                static_cast<unsigned long long>(s.nondeterministic));
    std::printf("%-28s %-12s %7s %6s %6s %12s %12s %11s %11s  %-44s %s\n", "op", "output", "records", "exact", "failed",
                "mismatches", "tol. fails", "max rel", "rel. L2", "verdict (merged calls)", "per call");
    for (const OpVerdict& v : replay.ops())
      std::printf("%-28s %-12s %7llu %6llu %6llu %12llu %12llu %11.3g %11.3g  %-44s %s\n", printable(v.op).c_str(),
                  printable(v.output_name.empty() ? std::to_string(v.output) : v.output_name).c_str(),
                  static_cast<unsigned long long>(v.group.records),
                  static_cast<unsigned long long>(v.group.exact), static_cast<unsigned long long>(v.group.failed),
                  static_cast<unsigned long long>(v.signature.bitwise_mismatch_count),
                  static_cast<unsigned long long>(v.signature.tolerance_fail_count), v.signature.max_rel_error,
                  relative_l2(v.signature), v.detected ? top_verdict(v.detection, true).c_str() : v.detect_error.c_str(),
                  per_call_text(v.per_call).c_str());
  }
  return findings ? kFindings : kOk;
}

}  // namespace

Command add_playback(CLI::App& app) {
  auto* sub = app.add_subcommand("playback", "Replay a trace through a candidate kernel and name each op's error model");
  auto o = std::make_shared<Options>();
  sub->add_option("TRACE", o->trace, "trace file")->required();
  sub->add_option("--candidate", o->candidate, "candidate kernel as LIB.so:SYMBOL (a peat_kernel_fn)")->required();
  sub->add_option("--op", o->op_glob, "replay only ops whose name matches this shell glob");
  sub->add_option("--steps", o->steps, "replay only steps A..B (inclusive; A:, :B and A also work)");
  sub->add_option("--repeat", o->repeat, "1, or 2 to run the candidate twice per record (non-determinism)")
      ->check(CLI::IsMember({1, 2}));
  sub->add_option("-j,--jobs", o->jobs, "threads; N > 1 declares the candidate thread-safe")->check(CLI::Range(1, 1024));
  sub->add_option("--jsonl", o->jsonl, "also write the per-record results as JSON lines (input of peat report)");
  auto* j = sub->add_flag("--json", o->json, "print one JSON object (docs/schemas/playback.schema.json)");
  sub->add_flag("--csv", o->csv_out, "print the verdict table as CSV")->excludes(j);
  return {sub, [o] { return run(*o); }};
}

}  // namespace peat_cli
