// C entry points of peat/report.h: check, convert, forward.
#include <peat/report.h>

#include "bindings/c/barrier.hpp"
#include "lib/analyzer/analyze.hpp"
#include "lib/analyzer/noise_band.hpp"
#include "lib/playback/playback.hpp"
#include "lib/report/report.hpp"

#include <cmath>
#include <cstring>
#include <memory>

namespace {

void check_exact_size(uint32_t got, size_t want, const char* name) {
  if (got != want)
    peat::impl::fail(PEAT_STATUS_VERSION_MISMATCH, "{}: struct_size {} is not {} (call its init function)", name, got, want);
}

peat::impl::report::Report& as_report(peat_report_t* report) {
  peat::impl::require_arg(report, "report");
  return *report;
}

}  // namespace

extern "C" {

PEAT_API void peat_report_options_init(peat_report_options_t* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof(peat_report_options_t);
  options->max_table_rows = 200;
  options->title = nullptr;
}

PEAT_API peat_status_t peat_report_create(const peat_report_options_t* options, peat_report_t** out_report) {
  return peat::impl::c_call(__func__, [&] {
    peat::impl::require_arg(out_report, "out_report");
    *out_report = nullptr;
    const auto opts = peat::impl::read_options(options, "options", peat_report_options_init);
    if (opts.max_table_rows < 1 || opts.max_table_rows > 1000000)
      peat::impl::fail(PEAT_STATUS_INVALID_ARGUMENT, "options.max_table_rows = {} is outside 1..1000000", opts.max_table_rows);
    *out_report = std::make_unique<peat_report>(opts).release();
  });
}

PEAT_API void peat_report_destroy(peat_report_t* report) { delete report; }

PEAT_API peat_status_t peat_report_add_input(peat_report_t* report, const char* path,
                                             peat_report_input_kind_t* out_kind) {
  return peat::impl::c_call(__func__, [&] {
    auto& r = as_report(report);
    peat::impl::require_arg(path, "path");
    const peat_report_input_kind_t kind = r.add_input(path);
    if (out_kind) *out_kind = kind;
  });
}

PEAT_API peat_status_t peat_report_add_signature(peat_report_t* report, const char* source, const char* op,
                                                 int64_t step, uint64_t call, const peat_signature_t* signature,
                                                 const peat_detection_t* detection) {
  return peat::impl::c_call(__func__, [&] {
    auto& r = as_report(report);
    peat::impl::require_arg(op, "op");
    const peat_signature_t sig = peat::impl::read_versioned(signature, peat::impl::analyzer::empty_signature(), "signature");
    if (detection) {
      check_exact_size(detection->struct_size, sizeof(peat_detection_t), "detection");
      if (detection->verdict_count < 0 || detection->verdict_count > PEAT_DETECT_MAX_VERDICTS)
        peat::impl::fail(PEAT_STATUS_INVALID_ARGUMENT, "detection.verdict_count = {} is outside 0..{}",
                   detection->verdict_count, PEAT_DETECT_MAX_VERDICTS);
    }
    r.add_signature(source ? source : "", op, step, call, sig, detection);
  });
}

PEAT_API peat_status_t peat_report_add_spatial_map(peat_report_t* report, const char* label,
                                                   const peat_spatial_map_t* map) {
  return peat::impl::c_call(__func__, [&] {
    auto& r = as_report(report);
    peat::impl::require_arg(map, "map");
    check_exact_size(map->struct_size, sizeof(peat_spatial_map_t), "map");
    r.add_spatial_map(label ? label : "spatial map", *map);
  });
}

PEAT_API peat_status_t peat_report_render_html(const peat_report_t* report, char* buffer, size_t capacity,
                                               size_t* out_length) {
  return peat::impl::c_call(__func__, [&] {
    peat::impl::require_arg(report, "report");
    const std::string html = report->render_html();
    if (out_length) *out_length = html.size();
    if (buffer == nullptr || capacity < html.size() + 1)
      peat::impl::fail(PEAT_STATUS_BUFFER_TOO_SMALL, "the page needs {} bytes (NUL included); capacity is {}",
                 html.size() + 1, capacity);
    std::memcpy(buffer, html.c_str(), html.size() + 1);
  });
}

PEAT_API peat_status_t peat_report_write_html(const peat_report_t* report, const char* path) {
  return peat::impl::c_call(__func__, [&] {
    peat::impl::require_arg(report, "report");
    peat::impl::require_arg(path, "path");
    report->write_html(path);
  });
}

PEAT_API peat_status_t peat_report_add_playback(peat_report_t* report, const char* candidate,
                                                const peat_playback_t* playback) {
  return peat::impl::c_call(__func__, [&] {
    auto& r = as_report(report);
    peat::impl::require_arg(playback, "playback");
    r.add_playback(candidate ? candidate : "", *playback);
  });
}

PEAT_API peat_status_t peat_report_focus_call(const peat_report_t* report, const char* candidate,
                                              uint64_t* out_record, uint64_t* out_output) {
  return peat::impl::c_call(__func__, [&] {
    peat::impl::require_arg(report, "report");
    peat::impl::require_arg(candidate, "candidate");
    const peat::impl::report::FocusCall f = report->focus_call(candidate);
    if (out_record) *out_record = f.record;
    if (out_output) *out_output = f.output;
  });
}

PEAT_API peat_status_t peat_report_add_candidate_map(peat_report_t* report, const char* candidate, const char* label,
                                                     const peat_spatial_map_t* map) {
  return peat::impl::c_call(__func__, [&] {
    auto& r = as_report(report);
    peat::impl::require_arg(candidate, "candidate");
    peat::impl::require_arg(map, "map");
    check_exact_size(map->struct_size, sizeof(peat_spatial_map_t), "map");
    r.add_candidate_map(candidate, label ? label : "spatial map", *map);
  });
}

PEAT_API peat_status_t peat_report_add_noise_band(peat_report_t* report, const char* stage,
                                                  const peat_noise_band_t* band) {
  return peat::impl::c_call(__func__, [&] {
    auto& r = as_report(report);
    peat::impl::require_arg(band, "band");
    r.add_noise_band(stage ? stage : "", *band);
  });
}

PEAT_API void peat_report_fi_run_init(peat_report_fi_run_t* run) {
  if (run == nullptr) return;
  std::memset(run, 0, sizeof *run);
  run->struct_size = sizeof(peat_report_fi_run_t);
  run->candidate_calls = -1;
  run->param_drift = NAN;
  run->test_accuracy = NAN;
}

PEAT_API peat_status_t peat_report_add_fi_run(peat_report_t* report, const peat_report_fi_run_t* run) {
  return peat::impl::c_call(__func__, [&] {
    auto& r = as_report(report);
    peat::impl::require_arg(run, "run");
    const auto in = peat::impl::read_options(run, "run", peat_report_fi_run_init);
    peat::impl::require_arg(in.candidate, "run->candidate");
    if (in.loss == nullptr && in.length > 0) peat::impl::fail(PEAT_STATUS_INVALID_ARGUMENT, "run->loss is NULL with length {}", in.length);
    if (in.impact) {
      if (in.impact->struct_size != sizeof(peat_impact_t))
        peat::impl::fail(PEAT_STATUS_INVALID_ARGUMENT, "run->impact->struct_size is {}; this library's is {}",
                   in.impact->struct_size, sizeof(peat_impact_t));
      if (in.impact->verdict != PEAT_IMPACT_INSIDE_NOISE && in.impact->verdict != PEAT_IMPACT_OUTSIDE_NOISE)
        peat::impl::fail(PEAT_STATUS_INVALID_ARGUMENT, "run->impact->verdict {} is not a peat_impact_verdict_t", in.impact->verdict);
    }
    peat::impl::report::FiRun f;
    f.candidate = in.candidate;
    f.label = in.label ? in.label : "";
    f.stage = in.stage ? in.stage : "";
    f.every = in.every;
    f.candidate_calls = in.candidate_calls;
    f.test_accuracy = in.test_accuracy;
    f.loss.label = f.label;
    for (size_t i = 0; i < in.length; ++i) {
      f.loss.x.push_back(in.steps ? static_cast<double>(in.steps[i]) : static_cast<double>(i));
      f.loss.y.push_back(in.loss[i]);
    }
    if (in.impact) f.impact = *in.impact;
    r.add_fi_run(std::move(f), in.steps, in.param_drift);
  });
}

}  // extern "C"
