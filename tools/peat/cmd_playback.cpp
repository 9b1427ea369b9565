// peat playback TRACE... --candidate LIB.so:SYMBOL: playback FI with a progress
// bar on a terminal and the verdict table at the end (or --json / --csv).
// Under mpirun (a tool built with MPI) every rank replays its share of each
// trace (the library's partition) and rank 0 merges the shares and writes the
// output, the same as one process writes (docs/distributed.md).
#include "tools/peat/commands.hpp"
#include "tools/peat/common.hpp"
#include "tools/peat/peer_replay.hpp"
#include "tools/peat/ranks.hpp"
#include "tools/peat/replay.hpp"
#include "tools/peat/verdicts.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace peat::cli {

namespace {

struct Options {
  std::vector<std::string> traces;
  std::string candidate, op_glob, steps, jsonl;
  int repeat = 1, jobs = 1;
  double rank_timeout = 120;
  bool peer = false;
  bool timing = false;
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

// A share that did not come back to rank 0 (its rank died, hung or failed).
struct Missing {
  int rank = 0;
  uint64_t first_record = 0, end_record = 0, records = 0;
  std::string why;
};

struct TraceRun {
  std::string path;
  peat::trace_reader reader;
  std::unique_ptr<Replay> replay;
  std::vector<Missing> missing;
};

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// --timing: where rank 0's time went (stderr, one JSON line; benchmarks/distributed).
struct Timing {
  double wait_s = 0, import_s = 0;
  uint64_t imported_records = 0;
};
Timing g_timing;

int32_t heartbeat(void*, uint64_t, uint64_t) {
  Ranks::instance().heartbeat();
  return 0;
}

// Under MPI: each rank replays its share; rank 0 imports the others' results
// (in rank order) and notes the shares that never came.
void merge_shares(peat::playback& playback, TraceRun& run, double timeout_s) {
  Ranks& ranks = Ranks::instance();
  std::vector<std::byte> mine = checked(run.path, [&] { return playback.export_results(); });
  const auto waited = Clock::now();
  std::vector<Ranks::Part> parts = ranks.gather(std::move(mine), timeout_s);
  g_timing.wait_s += since(waited);
  for (std::size_t r = 1; r < parts.size(); ++r) {
    Ranks::Part& part = parts[r];
    if (part.received) {
      const uint64_t before = checked(run.path, [&] { return playback.result_count(); });
      const auto t = Clock::now();
      const auto why = failure([&] { playback.import_results(part.bytes.data(), part.bytes.size()); });
      g_timing.import_s += since(t);
      g_timing.imported_records += checked(run.path, [&] { return playback.result_count(); }) - before;
      if (!why) continue;
      part.why = "its result could not be merged: " + *why;
    }
    Missing m;
    m.rank = static_cast<int>(r);
    m.why = part.why;
    const peat::playback::share share = checked(run.path, [&] { return playback.partition_share(static_cast<uint32_t>(r)); });
    m.first_record = share.first_record;
    m.end_record = share.end_record;
    m.records = share.records;
    std::fprintf(stderr, "peat playback: %s: share of rank %d (records %llu..%llu, %llu op records) is missing: %s\n",
                 run.path.c_str(), m.rank, static_cast<unsigned long long>(m.first_record),
                 static_cast<unsigned long long>(m.end_record), static_cast<unsigned long long>(m.records),
                 m.why.c_str());
    run.missing.push_back(std::move(m));
  }
}

nlohmann::json trace_json(const TraceRun& run) {
  const Replay& replay = *run.replay;
  const auto& s = replay.summary();
  nlohmann::json j;
  j["trace"] = run.path;
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
  if (!run.missing.empty()) {
    nlohmann::json missing = nlohmann::json::array();
    for (const Missing& m : run.missing)
      missing.push_back({{"rank", m.rank},
                         {"first_record", m.first_record},
                         {"end_record", m.end_record},
                         {"records", m.records},
                         {"why", m.why}});
    j["missing"] = missing;
  }
  j["findings"] = replay.findings() || !run.missing.empty();
  return j;
}

void print_csv(const TraceRun& run, bool with_trace) {
  for (const OpVerdict& v : run.replay->ops()) {
    const bool has = v.detected && v.detection.verdict_count > 0;
    if (with_trace) std::printf("%s,", csv(run.path).c_str());
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
}

void print_text(const TraceRun& run, const Options& opt) {
  const Replay& replay = *run.replay;
  const auto& s = replay.summary();
  std::printf("%s with %s: %llu records, %llu ok, %llu failed, %llu exact, %llu mismatched, %llu nondeterministic\n",
              run.path.c_str(), opt.candidate.c_str(), static_cast<unsigned long long>(s.done),
              static_cast<unsigned long long>(s.ok), static_cast<unsigned long long>(s.failed),
              static_cast<unsigned long long>(s.exact), static_cast<unsigned long long>(s.mismatched),
              static_cast<unsigned long long>(s.nondeterministic));
  for (const Missing& m : run.missing)
    std::printf("PARTIAL: the share of rank %d (records %llu..%llu, %llu op records) is missing: %s\n", m.rank,
                static_cast<unsigned long long>(m.first_record), static_cast<unsigned long long>(m.end_record),
                static_cast<unsigned long long>(m.records), m.why.c_str());
  std::printf("\n%-28s %-12s %7s %6s %6s %12s %12s %11s %11s  %-44s %s\n", "op", "output", "records", "exact", "failed",
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

int report(const Options& opt, const std::vector<TraceRun>& runs);

int run(const Options& opt) {
  const auto start = Clock::now();
  Ranks& ranks = Ranks::instance();
  const bool root = ranks.root();
  ReplayOptions ro;
  ro.candidate = opt.candidate;
  ro.op_glob = opt.op_glob;
  ro.run_twice = opt.repeat == 2;
  ro.jobs = opt.jobs;
  ro.progress = root && ranks.world() == 1 && stderr_is_tty() && !opt.json && !opt.csv_out;
  ro.partition_rank = static_cast<uint32_t>(ranks.rank());
  ro.partition_world = static_cast<uint32_t>(ranks.world());
  if (ranks.world() > 1) ro.progress_fn = heartbeat;
  ro.analyse = root;
  parse_steps(opt.steps, ro);
  if (opt.peer) {
    PeerOptions po;
    po.traces = opt.traces;
    po.replay = ro;
    po.replay.partition_rank = 0;
    po.replay.partition_world = 1;  // every device replays every record
    po.replay.analyse = true;
    po.json = opt.json;
    po.timeout_s = opt.rank_timeout;
    return run_peer_replay(po);
  }
  std::vector<TraceRun> runs;
  for (const std::string& path : opt.traces) runs.push_back(TraceRun{path, open_trace(path), nullptr, {}});
  // Every trace is open before the first Replay holds a reader: `runs` does not move any more.
  for (TraceRun& run : runs) {
    if (ranks.world() > 1) ro.merge = [&run, &opt](peat::playback& p) { merge_shares(p, run, opt.rank_timeout); };
    run.replay = std::make_unique<Replay>(run.reader, run.path, ro);
  }
  if (!root) return kOk;  // rank 0 reports for every rank
  const double replay_s = since(start);
  const int code = report(opt, runs);
  if (opt.timing) {
    uint64_t records = 0;
    double share_s = 0, share_cpu_s = 0;
    for (const TraceRun& run : runs) {
      records += run.replay->summary().done;
      share_s += run.replay->run_seconds();
      share_cpu_s += run.replay->run_cpu_seconds();
    }
    const nlohmann::json t = {{"ranks", ranks.world()},        {"records", records},
                              {"replay_s", replay_s},          {"wait_s", g_timing.wait_s}, {"share_s", share_s}, {"share_cpu_s", share_cpu_s},
                              {"import_s", g_timing.import_s}, {"imported_records", g_timing.imported_records},
                              {"wall_s", since(start)}};
    std::fflush(stdout);
    std::fprintf(stderr, "peat playback: timing %s\n", t.dump().c_str());
  }
  return code;
}

int report(const Options& opt, const std::vector<TraceRun>& runs) {
  if (!opt.jsonl.empty())
    for (std::size_t i = 0; i < runs.size(); ++i)
      checked(opt.jsonl, [&] { runs[i].replay->playback().write_jsonl(opt.jsonl.c_str(), i > 0); });
  bool findings = false;
  for (const TraceRun& run : runs) findings = findings || run.replay->findings() || !run.missing.empty();
  const bool several = runs.size() > 1;
  if (opt.json) {
    nlohmann::json j;
    j["schema_version"] = 1;
    j["command"] = "playback";
    if (!several) {
      j = trace_json(runs[0]);
      j["schema_version"] = 1;
      j["command"] = "playback";
    }
    j["candidate"] = opt.candidate;
    j["repeat"] = opt.repeat;
    if (several) {
      nlohmann::json traces = nlohmann::json::array();
      for (const TraceRun& run : runs) traces.push_back(trace_json(run));
      j["traces"] = traces;
    }
    j["findings"] = findings;
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";  // see cmd_info
  } else if (opt.csv_out) {
    std::printf("%sop,output,records,ok,failed,exact,nondeterministic,elements,bitwise_mismatches,tolerance_failures,"
                "max_abs_error,max_rel_error,relative_l2,verdict,confidence\n", several ? "trace," : "");
    for (const TraceRun& run : runs) print_csv(run, several);
  } else {
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (i > 0) std::printf("\n");
      print_text(runs[i], opt);
    }
  }
  return findings ? kFindings : kOk;
}

}  // namespace

Command add_playback(CLI::App& app) {
  auto* sub = app.add_subcommand("playback", "Replay a trace through a candidate kernel and name each op's error model");
  auto o = std::make_shared<Options>();
  sub->add_option("TRACE", o->traces, "trace files (e.g. every rank's trace of a run)")->required();
  sub->add_option("--candidate", o->candidate, "candidate kernel as LIB.so:SYMBOL (a peat_kernel_fn)")->required();
  sub->add_option("--op", o->op_glob, "replay only ops whose name matches this shell glob");
  sub->add_option("--steps", o->steps, "replay only steps A..B (inclusive; A:, :B and A also work)");
  sub->add_option("--repeat", o->repeat, "1, or 2 to run the candidate twice per record (non-determinism)")
      ->check(CLI::IsMember({1, 2}));
  sub->add_option("-j,--jobs", o->jobs, "threads; N > 1 declares the candidate thread-safe")->check(CLI::Range(1, 1024));
  sub->add_option("--jsonl", o->jsonl, "also write the per-record results as JSON lines (input of peat report)");
  sub->add_option("--rank-timeout", o->rank_timeout,
                  "under MPI: seconds rank 0 waits for a rank that sends nothing before reporting its share missing")
      ->check(CLI::PositiveNumber);
  sub->add_flag("--peer", o->peer,
                "peer replay (under mpirun, one rank per device): every rank replays every rank trace; rank 0 "
                "classifies each trace PERSISTENT / TRANSIENT / KERNEL (docs/distributed.md)");
  sub->add_flag("--timing", o->timing, "print where the time went (rank 0, stderr, one JSON line)");
  auto* j = sub->add_flag("--json", o->json, "print one JSON object (docs/schemas/playback.schema.json)");
  sub->add_flag("--csv", o->csv_out, "print the verdict table as CSV")->excludes(j);
  return {sub, [o] { return run(*o); }};
}

}  // namespace peat::cli
