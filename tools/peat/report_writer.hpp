// Builds the HTML report (peat/report.h) from input files and, optionally,
// candidates replayed over the first trace (signatures, verdicts, the worst
// call's spatial map). Shared by `peat report` and `peat demo`.
#pragma once

#include <string>
#include <vector>

namespace peat::cli {

struct ReportRequest {
  std::vector<std::string> inputs;      // traces, playback JSON lines, runtime-FI JSON
  std::vector<std::string> candidates;  // LIB.so:SYMBOL, replayed over the first trace
  std::string output;                   // report.html
  std::string title;                    // "" = the library's default
  bool quiet = false;
};

// Writes the report; returns the exit code (throws CliError on errors).
int write_report(const ReportRequest& request);

}  // namespace peat::cli
