// Shared pieces of the `peat` subcommands: exit codes, the one-line error,
// RAII holders of library handles, status checks.
#pragma once

#include <peat/peat.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace peat::cli {

// Exit codes (documented in `peat --help` and docs/cli.md).
enum Exit : int {
  kOk = 0,          // success, nothing found
  kFindings = 1,    // the command worked and found something: mismatches beyond tolerance,
                    // failed records, a damaged trace (verify)
  kUsage = 2,       // bad command line
  kBadInput = 3,    // a file is missing, unreadable or malformed (trace, JSON)
  kCandidate = 4,   // the candidate library or symbol cannot be loaded, or the candidate failed
  kInternal = 5     // anything else (a bug: please report it)
};

extern const char* const kExitCodesHelp;

// Thrown by the subcommands; main prints "peat <cmd>: <message>" on one line.
class CliError : public std::runtime_error {
 public:
  CliError(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

// Exit code for a library status (I/O and data errors -> kBadInput, ...).
int exit_code_for(peat_status_t status);

// Throws CliError when status != OK: "<what>: <library message>", with the
// library's message flattened to one line.
void check(peat_status_t status, const std::string& what);

// The thread's last library error without the function-name prefix, one line.
std::string library_message();

// One line: newlines and tabs become spaces, other control characters \xNN.
std::string one_line(std::string text);

// Text for a terminal: control characters (C0, DEL, C1) are written as \xNN
// escapes, so a trace's strings cannot move the cursor or recolour output.
std::string printable(std::string_view text);

struct TraceCloser {
  void operator()(peat_trace_reader_t* r) const noexcept { peat_trace_close(r); }
};
using TraceReader = std::unique_ptr<peat_trace_reader_t, TraceCloser>;

// Opens a complete trace; a trace without footer gives a hint to use
// `peat verify --recover`. Throws CliError.
TraceReader open_trace(const std::string& path);

// Record info with struct_size set; throws CliError.
peat_trace_record_info_t record_info(const peat_trace_reader_t* reader, uint64_t index);

// Whether stdout / stderr is a terminal.
bool stdout_is_tty();
bool stderr_is_tty();

// Numbers for JSON: non-finite values become null.
nlohmann::json json_number(double value);

}  // namespace peat::cli
