#include "lib/trace/delta.hpp"

#include "lib/trace/codec.hpp"

#include <algorithm>
#include <cstring>

namespace peat::impl::trace {

void xor_into(std::byte* dst, const std::byte* src, std::size_t n) noexcept {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {  // word at a time; the compiler vectorises it
    uint64_t a, b;
    std::memcpy(&a, dst + i, 8);
    std::memcpy(&b, src + i, 8);
    a ^= b;
    std::memcpy(dst + i, &a, 8);
  }
  for (; i < n; ++i) dst[i] ^= src[i];
}

bool delta_pays(const std::byte* xored, const std::byte* plain, std::size_t bytes, std::size_t elem_size) noexcept {
  if (elem_size < 2 || bytes < elem_size) return false;
  std::size_t zero_xor = 0, zero_plain = 0;
  for (std::size_t i = 0; i < bytes; ++i) {
    zero_xor += xored[i] == std::byte{0};
    zero_plain += plain[i] == std::byte{0};
  }
  return zero_xor >= zero_plain + bytes / elem_size / 2;
}

bool encode_delta(int level, const std::byte* in, const std::byte* base, std::size_t bytes, std::size_t elem_size,
                  ByteBuffer& buffer, std::size_t* encoded) {
  if (elem_size < 2 || bytes < elem_size) return false;
  thread_local std::vector<std::byte> xored;
  // The probe: whole elements of the first part, judged by the same rule.
  const std::size_t probe = std::min(bytes, kDeltaProbeBytes / elem_size * elem_size);
  xored.assign(in, in + probe);
  xor_into(xored.data(), base, probe);
  bool pays = delta_pays(xored.data(), in, probe, elem_size);
  if (pays && probe < bytes) {
    xored.insert(xored.end(), in + probe, in + bytes);
    xor_into(xored.data() + probe, base + probe, bytes - probe);
    pays = delta_pays(xored.data(), in, bytes, elem_size);
  }
  if (pays) *encoded = encode_replacing(PEAT_TRACE_CODEC_SHUFFLE_ZSTD, level, xored.data(), bytes, elem_size, buffer);
  if (xored.capacity() > (std::size_t{64} << 20)) {
    xored.clear();
    xored.shrink_to_fit();  // do not keep huge scratch buffers per thread
  }
  return pays;
}

}  // namespace peat::impl::trace
