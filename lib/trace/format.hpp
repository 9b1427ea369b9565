// The byte layout of a PEAT trace file (docs/trace-format.md): constants and
// little-endian helpers shared by the writer and the reader.
#pragma once

#include <peat/trace.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace peat::impl::trace {

// File header: magic[8], u16 major, u16 minor, u32 flags, u32 meta_len,
// u32 reserved, u64 checksum (XXH3-64 of bytes [0, 24) then the metadata),
// then meta_len bytes of RunInfo FlatBuffer, zero-padded to a multiple of 8.
inline constexpr unsigned char kFileMagic[8] = {0x89, 'P', 'E', 'A', 'T', '\r', '\n', 0x1A};
inline constexpr std::size_t kHeaderFixed = 32;

// Record frame: u32 magic, u16 kind, u16 flags, u32 meta_len, u32 reserved,
// u64 payload_len, u64 checksum (XXH3-64 of bytes [0, 24) then the metadata),
// then the metadata padded to 8, then the payload padded to 8.
inline constexpr uint32_t kRecordMagic = 0x43455250u;  // "PREC" little-endian
inline constexpr std::size_t kFrameFixed = 32;

// Kinds in the frame: the public peat_trace_kind_code values plus the index.
inline constexpr uint16_t kKindIndex = 15;

// Trailer (last 32 bytes of a closed file): magic[8], u64 index_offset,
// u64 record_count, u64 checksum (XXH3-64 of bytes [0, 24)).
inline constexpr unsigned char kTrailerMagic[8] = {'P', 'E', 'A', 'T', 'E', 'N', 'D', 0};
inline constexpr std::size_t kTrailerSize = 32;

// Hard limits of the format.
inline constexpr uint32_t kMaxMetaBytes = 0x7FFFFFFFu;  // meta_len < 2 GiB
inline constexpr int kMaxDims = 32;

// Limits the writer and every default reader share (docs/reliability.md,
// "Limits"): the writer refuses a record a default reader would refuse, so an
// acknowledged record is always readable.
inline constexpr uint64_t kDefaultMaxMetaBytes = uint64_t{64} << 20;  // FlatBuffer metadata of one record
inline constexpr uint64_t kDefaultMaxTensorBytes = uint64_t{4} << 30;  // one decoded tensor (load_tensor_alloc)

// zstd cannot decode more than 128 KiB per block, and a block costs at least
// 4 bytes (3-byte header and 1 byte of content), so a zstd frame of n bytes
// decodes to at most n / 4 * 128 KiB plus one block: a tensor declaring more
// is refused before anything is allocated.
inline constexpr uint64_t kZstdMaxRatio = (uint64_t{128} << 10) / 4;
inline constexpr uint64_t kZstdSlack = uint64_t{128} << 10;

// Sequence numbers (Record.seq, Index.seqs) are carried from this minor on.
inline constexpr uint16_t kMinorWithSeq = 1;
// Tensor references (Tensor.ref_seq: bytes stored once per file) from this minor on.
inline constexpr uint16_t kMinorWithRefs = 2;
// XOR-delta tensors (codec XOR_DELTA_SHUFFLE_ZSTD, Tensor.base_seq) from this minor on.
inline constexpr uint16_t kMinorWithDeltas = 3;

constexpr uint64_t pad8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

inline void put_u16(unsigned char* p, uint16_t v) {
  p[0] = static_cast<unsigned char>(v);
  p[1] = static_cast<unsigned char>(v >> 8);
}
inline void put_u32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline void put_u64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline uint16_t get_u16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t get_u32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint64_t get_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace peat::impl::trace
