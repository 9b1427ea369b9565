#include "tools/peat/common.hpp"

#include <cstdio>

#include <unistd.h>

#include <cmath>

namespace peat::cli {

const char* const kExitCodesHelp =
    "Exit codes:\n"
    "  0  success, nothing found\n"
    "  1  findings: mismatches beyond tolerance, failed records, or a damaged trace (verify)\n"
    "  2  usage error (bad command line)\n"
    "  3  bad input: a file is missing, unreadable or malformed\n"
    "  4  the candidate library or symbol cannot be loaded\n"
    "  5  internal error\n";

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    // C1 controls are U+0080..U+009F, in UTF-8 0xC2 0x80..0x9F.
    const bool c1 = b == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(text[i + 1]) <= 0x9F;
    if (b < 0x20 || b == 0x7F || c1) {
      const unsigned v = c1 ? static_cast<unsigned char>(text[++i]) : b;
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\x%02X", v);
      out += esc;
    } else {
      out += static_cast<char>(b);
    }
  }
  return out;
}

std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return printable(text);  // a name in a message must not drive the terminal either
}

int exit_code_for(peat_status_t status) {
  switch (status) {
    case PEAT_STATUS_OK:
      return kOk;
    case PEAT_STATUS_NOT_FOUND:
    case PEAT_STATUS_IO_ERROR:
    case PEAT_STATUS_CORRUPT_DATA:
    case PEAT_STATUS_VERSION_MISMATCH:
    case PEAT_STATUS_OUT_OF_MEMORY:
    case PEAT_STATUS_SHAPE_MISMATCH:
    case PEAT_STATUS_UNSUPPORTED:
      return kBadInput;
    case PEAT_STATUS_INVALID_ARGUMENT:
      return kUsage;
    case PEAT_STATUS_CALLBACK_FAILED:
      return kCandidate;
    default:
      return kInternal;
  }
}

std::string library_message() {
  std::string msg = peat_last_error_message();
  // The library names its function first ("peat_trace_open: ..."); the user needs the rest.
  if (const auto p = msg.find(": "); p != std::string::npos && msg.rfind("peat_", 0) == 0 &&
                                     msg.find(' ') > p)
    msg = msg.substr(p + 2);
  return one_line(msg);
}

void check(peat_status_t status, const std::string& what) {
  if (status == PEAT_STATUS_OK) return;
  const std::string msg = library_message();
  // Say `what` (usually the file) only when the library's message does not already.
  throw CliError(exit_code_for(status), msg.find(what) != std::string::npos ? msg : what + ": " + msg);
}

TraceReader open_trace(const std::string& path) {
  peat_trace_reader_t* r = nullptr;
  const peat_status_t s = peat_trace_open(path.c_str(), nullptr, &r);
  if (s != PEAT_STATUS_OK) {
    std::string msg = library_message();
    if (s == PEAT_STATUS_CORRUPT_DATA && msg.find("footer") != std::string::npos)
      msg += " (try: peat verify " + path + " --recover OUT)";
    throw CliError(exit_code_for(s), one_line(msg.find(path) == std::string::npos ? path + ": " + msg : msg));
  }
  return TraceReader(r);
}

peat_trace_record_info_t record_info(const peat_trace_reader_t* reader, uint64_t index) {
  peat_trace_record_info_t info{};
  info.struct_size = sizeof info;
  check(peat_trace_record_info(reader, index, &info), "record " + std::to_string(index));
  return info;
}

bool stdout_is_tty() { return isatty(STDOUT_FILENO) == 1; }
bool stderr_is_tty() { return isatty(STDERR_FILENO) == 1; }

nlohmann::json json_number(double value) {
  if (!std::isfinite(value)) return nullptr;
  return value;
}

}  // namespace peat::cli
