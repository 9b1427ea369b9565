// Shared pieces of the `peat` subcommands: exit codes, the one-line error and
// the one conversion of the library's errors (peat::error) into it.
#pragma once

#include "peat/peat.hpp"

#include <nlohmann/json.hpp>

#include <optional>
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

// The library's message of `e` as the user reads it: without the status
// name peat.hpp and the function name the library put first, one line.
std::string library_message(const peat::error& e);

// The one conversion of a library error: "<what>: <library message>" (the
// message alone when it names `what` already), the exit code of its status.
CliError cli_error(const peat::error& e, const std::string& what);

// Runs `call` (peat.hpp calls) and returns its value; a library error leaves
// as cli_error(e, what), so every failure names what the user gave.
template <typename F>
auto checked(const std::string& what, F&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const peat::error& e) {
    throw cli_error(e, what);
  }
}

// Runs library calls whose failure the command reports and goes on from:
// the library's message when one failed, nullopt when all succeeded.
template <typename F>
std::optional<std::string> failure(F&& call) {
  try {
    call();
    return std::nullopt;
  } catch (const peat::error& e) {
    return library_message(e);
  }
}

// One line: newlines and tabs become spaces, other control characters \xNN.
std::string one_line(std::string text);

// Text for a terminal: control characters (C0, DEL, C1) are written as \xNN
// escapes, so a trace's strings cannot move the cursor or recolour output.
std::string printable(std::string_view text);

// Opens a complete trace; a trace without footer gives a hint to use
// `peat verify --recover`. Throws CliError.
peat::trace_reader open_trace(const std::string& path);

// Record `index`'s info; throws CliError naming the record.
peat_trace_record_info_t record_info(const peat::trace_reader& reader, uint64_t index);

// Whether stdout / stderr is a terminal.
bool stdout_is_tty();
bool stderr_is_tty();

// Numbers for JSON: non-finite values become null.
nlohmann::json json_number(double value);

}  // namespace peat::cli
