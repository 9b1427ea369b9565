#include "lib/report/defaults.hpp"

#include "lib/core/error.hpp"
#include "lib/detector/defaults.hpp"

#include <cmath>
#include <cstring>

namespace peat::impl::report {

peat_report_options_t default_options() noexcept {
  peat_report_options_t options;
  std::memset(&options, 0, sizeof options);
  options.struct_size = sizeof(peat_report_options_t);
  options.max_table_rows = 200;
  options.title = nullptr;
  return options;
}

peat_report_fi_run_t default_fi_run() noexcept {
  peat_report_fi_run_t run;
  std::memset(&run, 0, sizeof run);
  run.struct_size = sizeof(peat_report_fi_run_t);
  run.candidate_calls = -1;
  run.param_drift = NAN;
  run.test_accuracy = NAN;
  return run;
}

void check_options(const peat_report_options_t& options) {
  if (options.max_table_rows < 1 || options.max_table_rows > 1000000)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.max_table_rows = {} is outside 1..1000000", options.max_table_rows);
}

void check_detection(const peat_detection_t& detection) {
  detector::require_exact_size(detection.struct_size, sizeof(peat_detection_t), "detection");
  if (detection.verdict_count < 0 || detection.verdict_count > PEAT_DETECT_MAX_VERDICTS)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "detection.verdict_count = {} is outside 0..{}", detection.verdict_count,
         PEAT_DETECT_MAX_VERDICTS);
}

FiRun fi_run_from(const peat_report_fi_run_t& in) {
  if (in.candidate == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "argument 'run->candidate' is NULL");
  if (in.loss == nullptr && in.length > 0)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "run->loss is NULL with length {}", in.length);
  if (in.impact) {
    if (in.impact->struct_size != sizeof(peat_impact_t))
      fail(PEAT_STATUS_INVALID_ARGUMENT, "run->impact->struct_size is {}; this library's is {}",
           in.impact->struct_size, sizeof(peat_impact_t));
    if (in.impact->verdict != PEAT_IMPACT_INSIDE_NOISE && in.impact->verdict != PEAT_IMPACT_OUTSIDE_NOISE)
      fail(PEAT_STATUS_INVALID_ARGUMENT, "run->impact->verdict {} is not a peat_impact_verdict_t",
           in.impact->verdict);
  }
  FiRun f;
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
  return f;
}

}  // namespace peat::impl::report
