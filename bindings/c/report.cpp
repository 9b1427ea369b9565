// C entry points of peat/report.h: check, convert, forward.
#include <peat/report.h>

#include "bindings/c/barrier.hpp"
#include "lib/analyzer/analyze.hpp"
#include "lib/analyzer/noise_band.hpp"
#include "lib/playback/playback.hpp"
#include "lib/report/defaults.hpp"
#include "lib/report/report.hpp"

#include <memory>

using namespace peat::impl;  // the C layer forwards to the core (lib/)

extern "C" {

PEAT_API void peat_report_options_init(peat_report_options_t* p) { if (p) *p = report::default_options(); }

PEAT_API peat_status_t peat_report_create(const peat_report_options_t* options, peat_report_t** out_report) {
  return c_call(__func__, [&] {
    require_arg(out_report, "out_report");
    *out_report = nullptr;
    const auto opts = read_options(options, "options", peat_report_options_init);
    *out_report = std::make_unique<peat_report>(opts).release();
  });
}

PEAT_API void peat_report_destroy(peat_report_t* report) { delete report; }

PEAT_API peat_status_t peat_report_add_input(peat_report_t* report, const char* path,
                                             peat_report_input_kind_t* out_kind) {
  return c_with(__func__, report, "report", [&](auto& r) {
    require_arg(path, "path");
    set_optional(out_kind, r.add_input(path));
  });
}

PEAT_API peat_status_t peat_report_add_signature(peat_report_t* report, const char* source, const char* op,
                                                 int64_t step, uint64_t call, const peat_signature_t* signature,
                                                 const peat_detection_t* detection) {
  return c_with(__func__, report, "report", [&](auto& r) {
    require_arg(op, "op");
    const peat_signature_t sig = read_versioned(signature, analyzer::empty_signature(), "signature");
    r.add_signature(source ? source : "", op, step, call, sig, detection);
  });
}

PEAT_API peat_status_t peat_report_add_spatial_map(peat_report_t* report, const char* label,
                                                   const peat_spatial_map_t* map) {
  return c_with(__func__, report, "report", [&](auto& r) {
    require_arg(map, "map");
    r.add_spatial_map(label ? label : "spatial map", *map);
  });
}

PEAT_API peat_status_t peat_report_render_html(const peat_report_t* report, char* buffer, size_t capacity,
                                               size_t* out_length) {
  return c_with(__func__, report, "report",
                [&](auto& r) { copy_text_out(r.render_html(), buffer, capacity, out_length, "the page"); });
}

PEAT_API peat_status_t peat_report_write_html(const peat_report_t* report, const char* path) {
  return c_call(__func__, [&] {
    require_arg(report, "report");
    require_arg(path, "path");
    report->write_html(path);
  });
}

PEAT_API peat_status_t peat_report_add_playback(peat_report_t* report, const char* candidate,
                                                const peat_playback_t* playback) {
  return c_with(__func__, report, "report", [&](auto& r) {
    require_arg(playback, "playback");
    r.add_playback(candidate ? candidate : "", *playback);
  });
}

PEAT_API peat_status_t peat_report_focus_call(const peat_report_t* report, const char* candidate,
                                              uint64_t* out_record, uint64_t* out_output) {
  return c_call(__func__, [&] {
    require_arg(report, "report");
    require_arg(candidate, "candidate");
    const report::FocusCall f = report->focus_call(candidate);
    if (out_record) *out_record = f.record;
    if (out_output) *out_output = f.output;
  });
}

PEAT_API peat_status_t peat_report_add_candidate_map(peat_report_t* report, const char* candidate, const char* label,
                                                     const peat_spatial_map_t* map) {
  return c_with(__func__, report, "report", [&](auto& r) {
    require_arg(candidate, "candidate");
    require_arg(map, "map");
    r.add_candidate_map(candidate, label ? label : "spatial map", *map);
  });
}

PEAT_API peat_status_t peat_report_add_noise_band(peat_report_t* report, const char* stage,
                                                  const peat_noise_band_t* band) {
  return c_with(__func__, report, "report", [&](auto& r) {
    require_arg(band, "band");
    r.add_noise_band(stage ? stage : "", *band);
  });
}

PEAT_API void peat_report_fi_run_init(peat_report_fi_run_t* p) { if (p) *p = report::default_fi_run(); }

PEAT_API peat_status_t peat_report_add_fi_run(peat_report_t* report, const peat_report_fi_run_t* run) {
  return c_with(__func__, report, "report", [&](auto& r) {
    require_arg(run, "run");
    const auto in = read_options(run, "run", peat_report_fi_run_init);
    r.add_fi_run(report::fi_run_from(in), in.steps, in.param_drift);
  });
}

}  // extern "C"
