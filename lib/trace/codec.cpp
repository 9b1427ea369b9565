#include "lib/trace/codec.hpp"

#include "lib/core/error.hpp"
#include "lib/trace/format.hpp"

#include <xxhash.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace peat::impl::trace {

namespace {

struct CCtxDeleter {
  void operator()(ZSTD_CCtx* c) const noexcept { ZSTD_freeCCtx(c); }
};
struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const noexcept { ZSTD_freeDCtx(d); }
};

ZSTD_CCtx* thread_cctx() {
  thread_local std::unique_ptr<ZSTD_CCtx, CCtxDeleter> ctx(ZSTD_createCCtx());
  if (!ctx) throw std::bad_alloc();
  return ctx.get();
}
ZSTD_DCtx* thread_dctx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> ctx(ZSTD_createDCtx());
  if (!ctx) throw std::bad_alloc();
  return ctx.get();
}

}  // namespace

std::size_t encoded_bound(peat_trace_codec_t codec, std::size_t raw_bytes) noexcept {
  if (codec == PEAT_TRACE_CODEC_SHUFFLE_ZSTD) return raw_bytes == 0 ? 0 : ZSTD_compressBound(raw_bytes);
  return raw_bytes;
}

namespace {

// Per-thread scratch of the encoders: the byte-shuffled tensor, and zstd
// output that does not go straight to its destination.
thread_local std::vector<std::byte> t_shuffled;
thread_local std::vector<std::byte> t_compressed;

// Drops scratch buffers that grew huge (not kept per thread).
void trim_scratch() noexcept {
  for (auto* scratch : {&t_shuffled, &t_compressed}) {
    if (scratch->capacity() > (std::size_t{64} << 20)) {
      scratch->clear();
      scratch->shrink_to_fit();
    }
  }
}

// The bytes zstd reads: `in` itself, or its byte-shuffle in scratch.
const std::byte* shuffled_source(const std::byte* in, std::size_t bytes, std::size_t elem_size) {
  if (elem_size <= 1) return in;
  t_shuffled.resize(bytes);
  shuffle_bytes(in, t_shuffled.data(), bytes, elem_size);
  return t_shuffled.data();
}

// zstd of `bytes` bytes at `src` into `dst` (room for `capacity` bytes); 0
// when the encoding does not fit there, the encoded size otherwise.
std::size_t compress(std::byte* dst, std::size_t capacity, const std::byte* src, std::size_t bytes, int level) {
  const std::size_t n = ZSTD_compressCCtx(thread_cctx(), dst, capacity, src, bytes, level);
  if (!ZSTD_isError(n)) return n;
  if (ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall) return 0;
  fail(PEAT_STATUS_INTERNAL, "zstd compression failed: {}", ZSTD_getErrorName(n));
}

// zstd of `src` into scratch sized to the bound.
std::pair<const std::byte*, std::size_t> compress_to_scratch(const std::byte* src, std::size_t bytes, int level) {
  const std::size_t bound = ZSTD_compressBound(bytes);
  if (t_compressed.size() < bound) t_compressed.resize(bound);
  const std::size_t n = compress(t_compressed.data(), bound, src, bytes, level);
  if (n == 0) fail(PEAT_STATUS_INTERNAL, "zstd compression failed: its bound of {} bytes was too small", bound);
  return {t_compressed.data(), n};
}

void check_codec(peat_trace_codec_t codec) {
  if (codec != PEAT_TRACE_CODEC_RAW && codec != PEAT_TRACE_CODEC_SHUFFLE_ZSTD)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "unknown trace codec {}", codec);
}

}  // namespace

std::size_t encode(peat_trace_codec_t codec, int level, const std::byte* in, std::size_t bytes,
                   std::size_t elem_size, std::vector<std::byte>& out) {
  check_codec(codec);
  const std::size_t start = out.size();
  if (codec == PEAT_TRACE_CODEC_RAW) {
    out.resize(start + bytes);
    if (bytes) std::memcpy(out.data() + start, in, bytes);
    return bytes;
  }
  if (bytes == 0) return 0;
  // Compressed into a per-thread scratch buffer, then appended: growing `out`
  // by the whole bound would zero-fill (and fault in) about the raw size for
  // every tensor only for zstd to overwrite part of it.
  const auto [data, n] = compress_to_scratch(shuffled_source(in, bytes, elem_size), bytes, level);
  out.insert(out.end(), data, data + n);
  trim_scratch();
  return n;
}

std::size_t encode_replacing(peat_trace_codec_t codec, int level, const std::byte* in, std::size_t bytes,
                             std::size_t elem_size, ByteBuffer& buffer) {
  check_codec(codec);
  if (codec == PEAT_TRACE_CODEC_RAW || bytes == 0) {
    if (buffer.data() != in || buffer.size() != bytes) {
      ByteBuffer copy;  // `in` may lie inside `buffer`
      assign_bytes(copy, in, bytes);
      buffer.swap(copy);
    }
    return bytes;
  }
  std::size_t n = 0;
  if (elem_size > 1) {
    const std::byte* src = shuffled_source(in, bytes, elem_size);  // `in` is read: `buffer` is free
    // Room up to the bound within the capacity already there: resize only
    // zero-fills past the current size (nothing when `in` is the buffer).
    buffer.resize(std::min(buffer.capacity(), ZSTD_compressBound(bytes)));
    n = buffer.empty() ? 0 : compress(buffer.data(), buffer.size(), src, bytes, level);
    if (n == 0) {  // it does not fit (or there is no room): scratch, then copied in
      const auto [data, m] = compress_to_scratch(src, bytes, level);
      assign_bytes(buffer, data, m, pad8(m));  // room for the record's padding of the part
      n = m;
    }
    buffer.resize(n);
  } else {
    const auto [data, m] = compress_to_scratch(in, bytes, level);
    assign_bytes(buffer, data, m, pad8(m));  // room for the record's padding of the part
    n = m;
  }
  trim_scratch();
  return n;
}

const char* decode(peat_trace_codec_t codec, const std::byte* in, std::size_t encoded_bytes, std::byte* dst,
                   std::size_t raw_bytes, std::size_t elem_size, std::vector<std::byte>& scratch) {
  if (codec == PEAT_TRACE_CODEC_RAW) {
    if (encoded_bytes != raw_bytes) return "raw tensor whose encoded size differs from its decoded size";
    if (raw_bytes) std::memcpy(dst, in, raw_bytes);
    return "";
  }
  if (codec != PEAT_TRACE_CODEC_SHUFFLE_ZSTD) return "unknown codec";
  if (raw_bytes == 0) return encoded_bytes == 0 ? "" : "empty tensor with a non-empty payload";
  std::byte* target = dst;
  if (elem_size > 1) {
    scratch.resize(raw_bytes);
    target = scratch.data();
  }
  const std::size_t n = ZSTD_decompressDCtx(thread_dctx(), target, raw_bytes, in, encoded_bytes);
  if (ZSTD_isError(n)) return ZSTD_getErrorName(n);
  if (n != raw_bytes) return "zstd frame decodes to fewer bytes than the tensor's declared size";
  if (elem_size > 1) unshuffle_bytes(scratch.data(), dst, raw_bytes, elem_size);
  return "";
}

uint64_t checksum(const void* data, std::size_t bytes) noexcept { return XXH3_64bits(data, bytes); }

}  // namespace peat::impl::trace
