#include "lib/injector/glob.hpp"

#include "lib/core/error.hpp"

#include <cstddef>

namespace peat::impl::injector {

namespace {

// Parses the set starting at pattern[i] == '['. Returns the index after the
// closing ']' or npos when malformed; when `c` is given, sets `matched`.
std::size_t parse_set(std::string_view p, std::size_t i, char c, bool& matched, bool& reversed) {
  std::size_t j = i + 1;
  bool negate = false;
  if (j < p.size() && (p[j] == '!' || p[j] == '^')) {
    negate = true;
    ++j;
  }
  bool any = false, hit = false;
  bool first = true;
  while (j < p.size() && (p[j] != ']' || first)) {
    first = false;
    char lo = p[j];
    if (lo == '\\') {
      if (++j >= p.size()) return std::string_view::npos;
      lo = p[j];
    }
    char hi = lo;
    if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
      j += 2;
      hi = p[j];
      if (hi == '\\') {
        if (++j >= p.size()) return std::string_view::npos;
        hi = p[j];
      }
      if (static_cast<unsigned char>(hi) < static_cast<unsigned char>(lo)) reversed = true;
    }
    any = true;
    if (static_cast<unsigned char>(c) >= static_cast<unsigned char>(lo) &&
        static_cast<unsigned char>(c) <= static_cast<unsigned char>(hi))
      hit = true;
    ++j;
  }
  if (j >= p.size() || !any) return std::string_view::npos;
  matched = hit != negate;
  return j + 1;
}

}  // namespace

void validate_glob(std::string_view pattern, std::string_view what) {
  if (pattern.empty()) fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: the op pattern is empty", what);
  for (std::size_t i = 0; i < pattern.size();) {
    const char c = pattern[i];
    if (c == '\\') {
      if (i + 1 >= pattern.size())
        fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: op pattern '{}' ends with a lone '\\'", what, pattern);
      i += 2;
    } else if (c == '[') {
      bool matched = false, reversed = false;
      const std::size_t next = parse_set(pattern, i, '\0', matched, reversed);
      if (next == std::string_view::npos)
        fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: op pattern '{}' has an unterminated or empty '[' set at offset {}",
             what, pattern, i);
      if (reversed)
        fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: op pattern '{}' has a reversed range in the set at offset {}", what,
             pattern, i);
      i = next;
    } else {
      ++i;
    }
  }
}

bool glob_match(std::string_view p, std::string_view s) noexcept {
  // Iterative matching with one backtrack point (the last '*').
  std::size_t pi = 0, si = 0;
  std::size_t star_p = std::string_view::npos, star_s = 0;
  while (si < s.size()) {
    if (pi < p.size()) {
      const char c = p[pi];
      if (c == '*') {
        star_p = pi++;
        star_s = si;
        continue;
      }
      if (c == '?') {
        ++pi;
        ++si;
        continue;
      }
      if (c == '[') {
        bool matched = false, reversed = false;
        const std::size_t next = parse_set(p, pi, s[si], matched, reversed);
        if (next != std::string_view::npos && matched) {
          pi = next;
          ++si;
          continue;
        }
      } else {
        char lit = c;
        std::size_t step = 1;
        if (c == '\\' && pi + 1 < p.size()) {
          lit = p[pi + 1];
          step = 2;
        }
        if (lit == s[si]) {
          pi += step;
          ++si;
          continue;
        }
      }
    }
    if (star_p == std::string_view::npos) return false;
    pi = star_p + 1;
    si = ++star_s;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

}  // namespace peat::impl::injector
