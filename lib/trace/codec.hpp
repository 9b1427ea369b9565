// Tensor payload codecs of the trace format: raw, and byte-shuffle + zstd.
// Byte-shuffle groups byte 0 of every element, then byte 1, ... so that the
// slowly varying sign/exponent bytes of float tensors sit together and zstd
// finds them compressible.
#pragma once

#include <peat/trace.h>

#include "lib/core/byte_buffer.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace peat::impl::trace {

// out[b * n + i] = in[i * elem_size + b] for n = bytes / elem_size elements;
// trailing bytes (bytes % elem_size) are copied as they are.
void shuffle_bytes(const std::byte* in, std::byte* out, std::size_t bytes, std::size_t elem_size) noexcept;
void unshuffle_bytes(const std::byte* in, std::byte* out, std::size_t bytes, std::size_t elem_size) noexcept;

// Encodes `bytes` bytes of elements of `elem_size` bytes with `codec`
// (zstd `level` for SHUFFLE_ZSTD); appends the encoded bytes to `out` and
// returns how many were appended. Thread-safe (per-thread zstd contexts).
// Throws peat::impl::Error (INVALID_ARGUMENT for an unknown codec, INTERNAL when zstd fails).
std::size_t encode(peat_trace_codec_t codec, int level, const std::byte* in, std::size_t bytes,
                   std::size_t elem_size, std::vector<std::byte>& out);

// Encodes like encode(), but the encoding replaces the contents of `buffer`
// instead of being appended, and `in` may be buffer.data() (the bytes
// themselves): the recording path encodes each tensor copy into its own
// buffer, whose pages the copy faulted in already, so that no payload buffer
// is filled and no compressed bytes are copied once more. For SHUFFLE_ZSTD
// with elements of 2 bytes or more, zstd writes into `buffer` (after the
// shuffle has read `in`) within the capacity it has; an encoding that does
// not fit there, and 1-byte elements, go through per-thread scratch and are
// copied in. Returns the encoded size (buffer.size()). Thread-safe; throws
// like encode().
std::size_t encode_replacing(peat_trace_codec_t codec, int level, const std::byte* in, std::size_t bytes,
                             std::size_t elem_size, ByteBuffer& buffer);

// Decodes `encoded_bytes` bytes into exactly `raw_bytes` bytes at `dst`.
// Returns an empty string on success, otherwise what is wrong with the data
// (never throws for bad data; the caller adds file/record/offset).
const char* decode(peat_trace_codec_t codec, const std::byte* in, std::size_t encoded_bytes, std::byte* dst,
                   std::size_t raw_bytes, std::size_t elem_size, std::vector<std::byte>& scratch);

// Upper bound of the encoded size of `raw_bytes` bytes with `codec`.
std::size_t encoded_bound(peat_trace_codec_t codec, std::size_t raw_bytes) noexcept;

// XXH3-64 of a byte range.
uint64_t checksum(const void* data, std::size_t bytes) noexcept;

}  // namespace peat::impl::trace
