// JSON string escaping for the interposers' log lines and the CUPTI tracer's
// report: quotes, backslashes and control characters. Header-only, C++17.
#pragma once

#include <cstdio>
#include <string>

namespace peat::interpose {

inline std::string json_escape(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace peat::interpose
