// XOR-delta payloads (format 1.3, codec XOR_DELTA_SHUFFLE_ZSTD): a tensor that
// is a later version of one already in the file (a weight after an optimizer
// step) differs from it in the low mantissa bits, so its bytes XOR the
// earlier version's are mostly zero in the high byte planes, which
// byte-shuffle + zstd then compresses far better than the tensor itself.
#pragma once

#include "lib/core/byte_buffer.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace peat::impl::trace {

// dst[i] ^= src[i] for n bytes.
void xor_into(std::byte* dst, const std::byte* src, std::size_t n) noexcept;

// Whether the XOR of two versions (`xored`) is worth storing instead of the
// tensor itself (`plain`), elements of `elem_size` bytes: the XOR must hold at
// least half a byte per element more zero bytes than the tensor. A later
// version of a weight passes (its sign and exponent byte XOR to zero in
// nearly every element); two unrelated tensors fail (their sign bits differ
// in half the elements), and so does a tensor whose zeros (ReLU activations)
// the XOR would spoil. This costs one pass over the bytes instead of a
// second encoding. False for 1-byte elements.
bool delta_pays(const std::byte* xored, const std::byte* plain, std::size_t bytes, std::size_t elem_size) noexcept;

// Bytes of a tensor's first part that delta_pays judges before the whole
// tensor is XORed: versions of one weight change in every part alike, so a
// failing first part (an unrelated tensor at the same position) ends the
// attempt after 64 KiB instead of a pass over the whole tensor and a copy.
inline constexpr std::size_t kDeltaProbeBytes = std::size_t{64} << 10;

// Encodes `bytes` bytes of `in` against `base` (the same size): when the XOR
// pays (delta_pays on the first kDeltaProbeBytes, then on the whole), its
// byte-shuffle + zstd encoding (zstd `level`) replaces the contents of
// `buffer` (encode_replacing; `in` may be buffer.data()) and it returns true
// with `*encoded` set to its size; false (`buffer` untouched) otherwise.
// Thread-safe (per-thread scratch).
bool encode_delta(int level, const std::byte* in, const std::byte* base, std::size_t bytes, std::size_t elem_size,
                  ByteBuffer& buffer, std::size_t* encoded);

}  // namespace peat::impl::trace
