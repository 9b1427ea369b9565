// peat report INPUT... -o report.html: the self-contained HTML report.
#include "tools/peat/commands.hpp"
#include "tools/peat/common.hpp"
#include "tools/peat/replay.hpp"
#include "tools/peat/report_writer.hpp"

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

namespace peat::cli {

namespace {

struct ReportCloser {
  void operator()(peat_report_t* r) const noexcept { peat_report_destroy(r); }
};

const char* kind_name(peat_report_input_kind_t k) {
  return k == PEAT_REPORT_INPUT_TRACE ? "trace" : k == PEAT_REPORT_INPUT_PLAYBACK ? "playback results" : "runtime-FI report";
}

// The candidate's name on the page: the symbol without "_kernel"
// ("peat_cand_bf16"), as make demo's report.json names it.
std::string candidate_name(const std::string& spec) {
  std::string name = spec.substr(spec.rfind(':') + 1);
  const std::string suffix = "_kernel";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  return name;
}

// Replays `spec` over the trace and hands the playback to the report (its
// per-call verdicts and detections), then maps the call the report names as
// the most informative.
void add_candidate(peat_report_t* report, const peat_trace_reader_t* reader, const std::string& trace, const std::string& spec) {
  ReplayOptions ro;
  ro.candidate = spec;
  ro.run_twice = true;
  Replay replay(reader, trace, ro);
  const std::string name = candidate_name(spec);
  check(peat_report_add_playback(report, name.c_str(), replay.playback()), "report");
  uint64_t record = 0, output = 0;
  if (peat_report_focus_call(report, name.c_str(), &record, &output) != PEAT_STATUS_OK) return;  // every call exact
  WorstCall call;
  if (replay.map_call(record, output, call)) {
    const peat_status_t s = peat_report_add_candidate_map(report, name.c_str(), call.label.c_str(), &call.map);
    peat_spatial_map_release(&call.map);
    check(s, "report");
  }
}

}  // namespace

int write_report(const ReportRequest& request) {
  peat_report_options_t options;
  peat_report_options_init(&options);
  if (!request.title.empty()) options.title = request.title.c_str();
  peat_report_t* raw = nullptr;
  check(peat_report_create(&options, &raw), "report");
  std::unique_ptr<peat_report_t, ReportCloser> report(raw);
  std::string first_trace;
  for (const std::string& in : request.inputs) {
    peat_report_input_kind_t kind = 0;
    const peat_status_t s = peat_report_add_input(raw, in.c_str(), &kind);
    if (s != PEAT_STATUS_OK) {
      const std::string msg = library_message();
      throw CliError(exit_code_for(s), one_line(msg.find(in) == std::string::npos ? in + ": " + msg : msg));
    }
    if (kind == PEAT_REPORT_INPUT_TRACE && first_trace.empty()) first_trace = in;
    if (!request.quiet) std::printf("%s: %s\n", in.c_str(), kind_name(kind));
  }
  if (!request.candidates.empty()) {
    if (first_trace.empty()) throw CliError(kUsage, "--candidate needs a trace among the inputs");
    TraceReader reader = open_trace(first_trace);
    for (const std::string& spec : request.candidates) add_candidate(raw, reader.get(), first_trace, spec);
  }
  const peat_status_t s = peat_report_write_html(raw, request.output.c_str());
  check(s, request.output);
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(request.output, ec);
  std::printf("wrote %s (%llu bytes)\n", request.output.c_str(), static_cast<unsigned long long>(bytes));
  return kOk;
}

Command add_report(CLI::App& app) {
  auto* sub = app.add_subcommand("report", "Write one self-contained HTML report from traces, playback results and runtime-FI reports");
  auto r = std::make_shared<ReportRequest>();
  sub->add_option("INPUT", r->inputs, "trace files, playback JSON lines (peat playback --jsonl), runtime-FI JSON (make demo's report.json)")
      ->required();
  sub->add_option("-o,--output", r->output, "HTML file to write")->required();
  sub->add_option("--candidate", r->candidates,
                  "also replay this candidate (LIB.so:SYMBOL) over the first trace: signatures, histograms, bit heat map, "
                  "verdicts, spatial map (repeatable)");
  sub->add_option("--title", r->title, "page title");
  return {sub, [r] { return write_report(*r); }};
}

}  // namespace peat::cli
