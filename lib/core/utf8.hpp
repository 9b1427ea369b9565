// UTF-8 checks shared by the trace writer and reader (strings in a trace are
// valid UTF-8, docs/trace-format.md) and by the report's HTML/SVG escaping.
#pragma once

#include <cstddef>
#include <string_view>

namespace peat::impl {

// Length of the valid UTF-8 sequence at s[i] (1..4), or 0 when it is not one
// (bad lead byte, overlong form, surrogate, above U+10FFFF, cut short).
inline std::size_t utf8_length(std::string_view s, std::size_t i) noexcept {
  const auto b = static_cast<unsigned char>(s[i]);
  const std::size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  const auto b1 = static_cast<unsigned char>(n > 1 ? s[i + 1] : 0);
  if (n == 2 && b < 0xC2) return 0;                                   // overlong
  if (n == 3 && b == 0xE0 && b1 < 0xA0) return 0;                     // overlong
  if (n == 3 && b == 0xED && b1 >= 0xA0) return 0;                    // surrogate
  if (n == 4 && ((b == 0xF0 && b1 < 0x90) || b > 0xF4 || (b == 0xF4 && b1 >= 0x90))) return 0;
  return n;
}

// Byte offset of the first byte that is not valid UTF-8, or npos when all is.
inline std::size_t utf8_invalid_at(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

}  // namespace peat::impl
