// peat report INPUT... -o report.html: the self-contained HTML report.
#include "tools/peat/commands.hpp"
#include "tools/peat/common.hpp"
#include "tools/peat/replay.hpp"
#include "tools/peat/report_writer.hpp"

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

namespace peat::cli {

namespace {

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
void add_candidate(peat::report& report, const peat::trace_reader& reader, const std::string& trace, const std::string& spec) {
  ReplayOptions ro;
  ro.candidate = spec;
  ro.run_twice = true;
  Replay replay(reader, trace, ro);
  const std::string name = candidate_name(spec);
  checked("report", [&] { report.add_playback(name.c_str(), replay.playback()); });
  const auto focus = checked("report", [&] { return report.focus_call(name.c_str()); });
  if (!focus) return;  // every call exact
  WorstCall call;
  if (replay.map_call(focus->record, focus->output, call))
    checked("report", [&] { report.add_candidate_map(name.c_str(), call.label.c_str(), **call.map); });
}

}  // namespace

int write_report(const ReportRequest& request) {
  peat_report_options_t options;
  peat_report_options_init(&options);
  if (!request.title.empty()) options.title = request.title.c_str();
  peat::report report = checked("report", [&] { return peat::report(&options); });
  std::string first_trace;
  for (const std::string& in : request.inputs) {
    const peat_report_input_kind_t kind = checked(in, [&] { return report.add_input(in.c_str()); });
    if (kind == PEAT_REPORT_INPUT_TRACE && first_trace.empty()) first_trace = in;
    if (!request.quiet) std::printf("%s: %s\n", in.c_str(), kind_name(kind));
  }
  if (!request.candidates.empty()) {
    if (first_trace.empty()) throw CliError(kUsage, "--candidate needs a trace among the inputs");
    const peat::trace_reader reader = open_trace(first_trace);
    for (const std::string& spec : request.candidates) add_candidate(report, reader, first_trace, spec);
  }
  checked(request.output, [&] { report.write_html(request.output.c_str()); });
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
