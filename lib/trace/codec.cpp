#include "lib/trace/codec.hpp"

#include "lib/core/error.hpp"

#include <xxhash.h>
#include <zstd.h>

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

std::size_t encode(peat_trace_codec_t codec, int level, const std::byte* in, std::size_t bytes,
                   std::size_t elem_size, std::vector<std::byte>& out) {
  const std::size_t start = out.size();
  if (codec == PEAT_TRACE_CODEC_RAW) {
    out.resize(start + bytes);
    if (bytes) std::memcpy(out.data() + start, in, bytes);
    return bytes;
  }
  if (codec != PEAT_TRACE_CODEC_SHUFFLE_ZSTD) fail(PEAT_STATUS_INVALID_ARGUMENT, "unknown trace codec {}", codec);
  if (bytes == 0) return 0;
  thread_local std::vector<std::byte> shuffled;
  const std::byte* src = in;
  if (elem_size > 1) {
    shuffled.resize(bytes);
    shuffle_bytes(in, shuffled.data(), bytes, elem_size);
    src = shuffled.data();
  }
  // Compressed into a per-thread scratch buffer, then appended: growing `out`
  // by the whole bound would zero-fill (and fault in) about the raw size for
  // every tensor only for zstd to overwrite part of it.
  thread_local std::vector<std::byte> compressed;
  const std::size_t bound = ZSTD_compressBound(bytes);
  if (compressed.size() < bound) compressed.resize(bound);
  const std::size_t n = ZSTD_compressCCtx(thread_cctx(), compressed.data(), bound, src, bytes, level);
  if (ZSTD_isError(n)) fail(PEAT_STATUS_INTERNAL, "zstd compression failed: {}", ZSTD_getErrorName(n));
  out.insert(out.end(), compressed.begin(), compressed.begin() + static_cast<std::ptrdiff_t>(n));
  for (auto* scratch : {&shuffled, &compressed}) {
    if (scratch->capacity() > (std::size_t{64} << 20)) {
      scratch->clear();
      scratch->shrink_to_fit();  // do not keep huge scratch buffers per thread
    }
  }
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
