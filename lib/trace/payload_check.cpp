// Reader::check_payload: decoding a tensor and checking its checksum in
// bounded memory, whatever the tensor's size (verify and recovery).
#include "lib/trace/reader.hpp"

#include "lib/core/error.hpp"
#include "lib/trace/codec.hpp"
#include "lib/trace/record.hpp"
#include "trace/trace_generated.h"

#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace peat::impl::trace {

namespace {

// One zstd decoding stream over a tensor's encoded bytes in the file, read in
// bounded chunks.
struct ZstdStream {
  struct Free {
    void operator()(ZSTD_DCtx* d) const noexcept { ZSTD_freeDCtx(d); }
  };
  std::unique_ptr<ZSTD_DCtx, Free> ctx{ZSTD_createDCtx()};
  std::vector<std::byte> in_buf;
  ZSTD_inBuffer in{nullptr, 0, 0};
  uint64_t next = 0, end = 0;  // file range still to read
  bool finished = false;
};

constexpr std::size_t kChunk = std::size_t{4} << 20;
// Tensors up to this size are decoded whole (as load does); larger ones in chunks.
constexpr uint64_t kWholeDecodeBytes = uint64_t{64} << 20;
// Window the chunked decoder accepts: the writer's zstd levels (1..19) use at
// most 8 MiB; a crafted frame asking for more is refused instead of allocated.
constexpr int kWindowLogMax = 24;
// Most byte planes (element bytes) decoded as parallel streams.
constexpr std::size_t kMaxStreams = 16;

}  // namespace

void Reader::check_payload(uint64_t index, peat_trace_slot_t slot, uint64_t t) const {
  // A reference is checked by resolving it: its bytes are checked where they
  // are stored (verify reaches that tensor too), not decoded again here.
  if (tensor(index, slot, t).ref_seq().has_value()) {
    resolve(index, slot, t);
    return;
  }
  const fb::Tensor& td = tensor(index, slot, t);
  const RecordEntry& e = entries_[index];
  const uint64_t raw = td.raw_bytes();
  const auto codec = static_cast<peat_trace_codec_t>(td.codec());
  const uint64_t at = e.payload_offset + td.payload_offset();
  const auto bad_payload = [&](const std::string& why) {
    fail(PEAT_STATUS_CORRUPT_DATA, "{}: record {} at byte {}: {}[{}] payload at byte {}: {}", path_, index, e.offset,
         slot_name(slot), t, at, why);
  };
  const DLDataType dtype{td.dtype_code(), td.dtype_bits(), td.dtype_lanes()};
  // One stream per byte plane below: elements wider than 16 bytes (vector
  // lanes) are decoded whole instead, within the per-record memory cap.
  // A delta (format 1.3) is decoded whole with its base, as load does: its
  // bytes are its base's XOR the decoded payload (three buffers of its size).
  const bool delta = codec == PEAT_TRACE_CODEC_XOR_DELTA_SHUFFLE_ZSTD;
  const bool whole = raw <= kWholeDecodeBytes || delta ||
                     (codec == PEAT_TRACE_CODEC_SHUFFLE_ZSTD && element_size(dtype) > kMaxStreams);
  if (whole) {
    if (raw > kWholeDecodeBytes && (delta ? raw > options_.max_record_bytes / 3 : raw > options_.max_record_bytes))
      fail(PEAT_STATUS_OUT_OF_MEMORY, "{}: record {} at byte {}: {}[{}] of {} bytes with {}-byte elements is above "
           "options.max_record_bytes ({}) and cannot be checked in chunks", path_, index, e.offset, slot_name(slot), t,
           raw, element_size(dtype), options_.max_record_bytes);
    std::unique_ptr<std::byte[]> buf(new std::byte[raw > 0 ? raw : 1]);  // not zero-filled
    load(index, slot, t, buf.get(), static_cast<std::size_t>(raw));
    return;
  }
  XXH3_state_t* state = XXH3_createState();
  if (state == nullptr) throw std::bad_alloc();
  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> guard(state, XXH3_freeState);
  XXH3_64bits_reset(state);
  std::vector<std::byte> out(kChunk);
  if (codec == PEAT_TRACE_CODEC_RAW) {
    for (uint64_t done = 0; done < raw;) {
      const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(kChunk, raw - done));
      read_at(at + done, out.data(), n);
      XXH3_64bits_update(state, out.data(), n);
      done += n;
    }
  } else {
    const std::size_t es = element_size(dtype);
    // Byte-shuffled data holds byte b of every element in plane b: one stream
    // per plane (stream b first skips b planes) gives the elements back in
    // order with a few MiB per stream, at the cost of decoding again.
    const std::size_t planes = es > 1 ? es : 1;
    const uint64_t n = raw / planes, tail = raw % planes;
    std::vector<ZstdStream> streams(planes);
    const auto pull = [&](ZstdStream& z, std::byte* dst, std::size_t count) {
      std::size_t got = 0;
      while (got < count) {
        if (z.finished) bad_payload("the zstd frame ends before the tensor's declared size");
        if (z.in.pos == z.in.size && z.next < z.end) {
          const std::size_t k = static_cast<std::size_t>(std::min<uint64_t>(std::size_t{1} << 20, z.end - z.next));
          z.in_buf.resize(k);
          read_at(z.next, z.in_buf.data(), k);
          z.next += k;
          z.in = ZSTD_inBuffer{z.in_buf.data(), k, 0};
        }
        ZSTD_outBuffer o{dst + got, count - got, 0};
        const std::size_t before_in = z.in.pos;
        const std::size_t rc = ZSTD_decompressStream(z.ctx.get(), &o, &z.in);
        if (ZSTD_isError(rc)) bad_payload(ZSTD_getErrorName(rc));
        got += o.pos;
        if (rc == 0) z.finished = true;
        if (o.pos == 0 && z.in.pos == before_in && z.next >= z.end && !z.finished)
          bad_payload("the zstd frame is cut short");
      }
    };
    for (ZstdStream& z : streams) {
      if (!z.ctx) throw std::bad_alloc();
      ZSTD_DCtx_setParameter(z.ctx.get(), ZSTD_d_windowLogMax, kWindowLogMax);
      z.next = at;
      z.end = at + td.encoded_bytes();
    }
    for (std::size_t b = 1; b < planes; ++b)  // stream b skips planes 0..b-1
      for (uint64_t skip = uint64_t{b} * n; skip > 0;) {
        const std::size_t k = static_cast<std::size_t>(std::min<uint64_t>(kChunk, skip));
        pull(streams[b], out.data(), k);
        skip -= k;
      }
    const std::size_t per = planes > 1 ? kChunk / planes : kChunk;
    std::vector<std::byte> plane(planes > 1 ? per * planes : 0);
    for (uint64_t i = 0; i < n;) {
      const std::size_t c = static_cast<std::size_t>(std::min<uint64_t>(per, n - i));
      if (planes == 1) {
        pull(streams[0], out.data(), c);
      } else {
        for (std::size_t b = 0; b < planes; ++b) pull(streams[b], plane.data() + b * per, c);
        for (std::size_t k = 0; k < c; ++k)
          for (std::size_t b = 0; b < planes; ++b) out[k * planes + b] = plane[b * per + k];
      }
      XXH3_64bits_update(state, out.data(), c * planes);
      i += c;
    }
    ZstdStream& last = streams[planes - 1];
    if (tail) {
      pull(last, out.data(), static_cast<std::size_t>(tail));
      XXH3_64bits_update(state, out.data(), static_cast<std::size_t>(tail));
    }
    // The frame must end exactly here.
    std::byte extra{};
    ZSTD_outBuffer o{&extra, 1, 0};
    while (!last.finished) {
      if (last.in.pos == last.in.size && last.next < last.end) {
        const std::size_t k = static_cast<std::size_t>(std::min<uint64_t>(std::size_t{1} << 20, last.end - last.next));
        last.in_buf.resize(k);
        read_at(last.next, last.in_buf.data(), k);
        last.next += k;
        last.in = ZSTD_inBuffer{last.in_buf.data(), k, 0};
      }
      const std::size_t before_in = last.in.pos;
      const std::size_t rc = ZSTD_decompressStream(last.ctx.get(), &o, &last.in);
      if (ZSTD_isError(rc)) bad_payload(ZSTD_getErrorName(rc));
      if (o.pos > 0) bad_payload("the zstd frame decodes to more bytes than the tensor's declared size");
      if (rc == 0) last.finished = true;
      else if (last.in.pos == before_in && last.next >= last.end) bad_payload("the zstd frame is cut short");
    }
  }
  if (XXH3_64bits_digest(state) != td.checksum()) bad_payload("checksum mismatch");
}

}  // namespace peat::impl::trace
