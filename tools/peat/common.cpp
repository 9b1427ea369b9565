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

std::string library_message(const peat::error& e) {
  std::string msg = e.what();
  // peat.hpp puts the status name first ("CORRUPT_DATA: ..."), the library its
  // function ("peat_trace_open: ..."); the user needs the rest.
  const std::string status = std::string(peat_status_string(e.status())) + ": ";
  if (msg.rfind(status, 0) == 0) msg.erase(0, status.size());
  if (const auto p = msg.find(": "); p != std::string::npos && msg.rfind("peat_", 0) == 0 &&
                                     msg.find(' ') > p)
    msg = msg.substr(p + 2);
  return one_line(msg);
}

CliError cli_error(const peat::error& e, const std::string& what) {
  const std::string msg = library_message(e);
  // Say `what` (usually the file) only when the library's message does not already.
  return CliError(exit_code_for(e.status()), msg.find(what) != std::string::npos ? msg : what + ": " + msg);
}

peat::trace_reader open_trace(const std::string& path) {
  try {
    return peat::trace_reader(path.c_str());
  } catch (const peat::error& e) {
    const std::string msg = library_message(e);
    // The hint names the file, so the message needs no other mention of it.
    if (e.status() == PEAT_STATUS_CORRUPT_DATA && msg.find("footer") != std::string::npos)
      throw CliError(exit_code_for(e.status()), one_line(msg + " (try: peat verify " + path + " --recover OUT)"));
    throw cli_error(e, path);
  }
}

peat_trace_record_info_t record_info(const peat::trace_reader& reader, uint64_t index) {
  return checked("record " + std::to_string(index), [&] { return reader.record_info(index); });
}

bool stdout_is_tty() { return isatty(STDOUT_FILENO) == 1; }
bool stderr_is_tty() { return isatty(STDERR_FILENO) == 1; }

nlohmann::json json_number(double value) {
  if (!std::isfinite(value)) return nullptr;
  return value;
}

}  // namespace peat::cli
