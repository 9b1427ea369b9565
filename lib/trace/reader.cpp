#include "lib/trace/reader.hpp"

#include "lib/core/error.hpp"
#include "lib/core/strided_copy.hpp"
#include "lib/core/utf8.hpp"
#include "lib/trace/codec.hpp"
#include "lib/trace/format.hpp"
#include "lib/trace/record.hpp"
#include "trace/trace_generated.h"

#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

namespace peat::impl::trace {

namespace {

const char* slot_name(peat_trace_slot_t slot) {
  switch (slot) {
    case PEAT_TRACE_SLOT_INPUT: return "inputs";
    case PEAT_TRACE_SLOT_OUTPUT: return "outputs";
    case PEAT_TRACE_SLOT_CHECKPOINT: return "tensors";
    default: return "?";
  }
}

uint64_t frame_checksum(const unsigned char* head24, const void* meta, std::size_t meta_len) {
  XXH3_state_t* state = XXH3_createState();
  if (state == nullptr) throw std::bad_alloc();
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, head24, 24);
  XXH3_64bits_update(state, meta, meta_len);
  const uint64_t sum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return sum;
}

// FlatBuffers' verifier only checks 4-byte alignment of a vector's length
// prefix, so a crafted buffer can place 8-byte elements on a 4-byte boundary;
// reading them (and handing users a pointer to them, as shape and ints are)
// would be a misaligned access. The writer always aligns them to 8.
template <typename T>
bool misaligned(const flatbuffers::Vector<T>* v) {
  return v != nullptr && v->size() > 0 && reinterpret_cast<std::uintptr_t>(v->Data()) % alignof(T) != 0;
}

// "" when the string is absent or valid UTF-8 (the writer writes nothing else).
std::string check_str(const flatbuffers::String* s, const std::string& what) {
  if (s == nullptr) return {};
  const std::size_t at = utf8_invalid_at(std::string_view(s->c_str(), s->size()));
  if (at == std::string_view::npos) return {};
  return fmt::format("{}: byte {} is not valid UTF-8", what, at);
}

// Most bytes a zstd frame of `enc` bytes can decode to: a block holds at most
// 128 KiB and costs at least 3 bytes.
uint64_t zstd_decoded_bound(uint64_t enc) { return (enc / 3 + 1) * (uint64_t{128} << 10); }

// Checks one tensor description against the record's payload; "" when sound.
std::string check_tensor_desc(const fb::Tensor* t, uint64_t payload_len, bool allow_refs) {
  if (t == nullptr) return "null tensor entry";
  if (std::string why = check_str(t->name(), "name"); !why.empty()) return why;
  if (t->dtype_bits() == 0 || t->dtype_lanes() == 0) return "tensor dtype has zero bits or lanes";
  const auto* shape = t->shape();
  if (misaligned(shape)) return "tensor shape vector is not 8-byte aligned";
  const uint32_t ndim = shape ? shape->size() : 0;
  if (ndim > static_cast<uint32_t>(kMaxDims)) return fmt::format("tensor has {} dimensions (at most {})", ndim, kMaxDims);
  uint64_t numel = 1;
  for (uint32_t d = 0; d < ndim; ++d) {
    const int64_t extent = shape->Get(d);
    if (extent < 0) return fmt::format("tensor extent {} is negative", extent);
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(extent), &numel)) return "tensor element count overflows";
  }
  const DLDataType dt{t->dtype_code(), t->dtype_bits(), t->dtype_lanes()};
  uint64_t raw = 0;
  if (__builtin_mul_overflow(numel, element_size(dt), &raw) || raw > static_cast<uint64_t>(INT64_MAX))
    return "tensor byte size overflows";
  if (raw != t->raw_bytes())
    return fmt::format("tensor declares {} bytes but its shape and dtype give {}", t->raw_bytes(), raw);
  if (const auto* strides = t->strides()) {  // format 1.1: the recorded layout
    if (misaligned(strides)) return "tensor strides vector is not 8-byte aligned";
    if (strides->size() != ndim)
      return fmt::format("tensor has {} strides for {} dimensions", strides->size(), ndim);
    int64_t lo = 0, hi = 0, span = 0;
    if (!strided_span(static_cast<int>(ndim), shape ? shape->data() : nullptr, strides->data(), &lo, &hi) ||
        __builtin_sub_overflow(hi, lo, &span) || span >= INT64_MAX / 64)
      return "tensor strides span more elements than a storage can hold";
  }
  if (t->storage_offset() < 0) return fmt::format("tensor storage offset {} is negative", t->storage_offset());
  if (t->ref_seq().has_value()) {  // format 1.2: a reference, resolved when it is loaded (Reader::resolve)
    if (!allow_refs) return "tensor reference (format 1.2) in a file of an older format";
    if (t->ref_slot() > PEAT_TRACE_SLOT_CHECKPOINT)
      return fmt::format("tensor reference to unknown slot {}", static_cast<int>(t->ref_slot()));
    if (t->codec() != fb::Codec::Raw || t->encoded_bytes() != 0 || t->payload_offset() != 0)
      return "tensor reference with a payload of its own";
    return {};
  }
  const auto codec = static_cast<peat_trace_codec_t>(t->codec());
  if (codec != PEAT_TRACE_CODEC_RAW && codec != PEAT_TRACE_CODEC_SHUFFLE_ZSTD)
    return fmt::format("tensor has unknown codec {}", static_cast<int>(codec));
  const uint64_t enc = t->encoded_bytes();
  if (enc > payload_len || t->payload_offset() > payload_len - enc)
    return fmt::format("tensor payload [{}, +{}) lies outside the record's {}-byte payload", t->payload_offset(), enc,
                       payload_len);
  if (codec == PEAT_TRACE_CODEC_RAW && enc != raw)
    return fmt::format("raw tensor has {} encoded bytes but {} decoded bytes", enc, raw);
  if (codec == PEAT_TRACE_CODEC_SHUFFLE_ZSTD && enc > encoded_bound(codec, raw))
    return fmt::format("compressed tensor of {} bytes is larger than the bound for {} bytes", enc, raw);
  if (codec == PEAT_TRACE_CODEC_SHUFFLE_ZSTD && raw > 0 && raw > zstd_decoded_bound(enc))
    return fmt::format("compressed tensor of {} bytes declares {} decoded bytes, more than zstd can decode from it",
                       enc, raw);
  return {};
}

std::string check_tensors(const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* v, const char* what,
                          uint64_t payload_len, bool allow_refs) {
  if (v == nullptr) return {};
  for (uint32_t i = 0; i < v->size(); ++i) {
    std::string why = check_tensor_desc(v->Get(i), payload_len, allow_refs);
    if (!why.empty()) return fmt::format("{}[{}]: {}", what, i, why);
  }
  return {};
}

std::string check_body(const fb::Record* rec, uint16_t kind, uint64_t payload_len, bool allow_refs) {
  switch (kind) {
    case PEAT_TRACE_KIND_OP: {
      const auto* op = rec->body_as_OpInvocation();
      if (op == nullptr) return "frame kind 'op' but the metadata holds another record type";
      if (op->op() == nullptr || op->op()->size() == 0) return "op record without an op name";
      if (std::string why = check_str(op->op(), "op name"); !why.empty()) return why;
      if (std::string why = check_str(op->module_path(), "module_path"); !why.empty()) return why;
      if (op->phase() < PEAT_PHASE_FORWARD || op->phase() > PEAT_PHASE_OTHER)
        return fmt::format("op record has unknown phase {}", op->phase());
      if (const auto* attrs = op->attrs()) {
        for (uint32_t i = 0; i < attrs->size(); ++i) {
          const fb::Attr* a = attrs->Get(i);
          if (a == nullptr || a->key() == nullptr) return fmt::format("attrs[{}] has no key", i);
          if (static_cast<int>(a->type()) > PEAT_ATTR_INT_ARRAY)
            return fmt::format("attrs[{}] has unknown type {}", i, static_cast<int>(a->type()));
          if (misaligned(a->ints())) return fmt::format("attrs[{}]: ints vector is not 8-byte aligned", i);
          if (std::string why = check_str(a->key(), fmt::format("attrs[{}].key", i)); !why.empty()) return why;
          if (std::string why = check_str(a->s(), fmt::format("attrs[{}].s", i)); !why.empty()) return why;
        }
      }
      std::string why = check_tensors(op->inputs(), "inputs", payload_len, allow_refs);
      if (why.empty()) why = check_tensors(op->outputs(), "outputs", payload_len, allow_refs);
      return why;
    }
    case PEAT_TRACE_KIND_CHECKPOINT: {
      const auto* cp = rec->body_as_Checkpoint();
      if (cp == nullptr) return "frame kind 'checkpoint' but the metadata holds another record type";
      if (std::string why = check_str(cp->name(), "checkpoint name"); !why.empty()) return why;
      return check_tensors(cp->tensors(), "tensors", payload_len, allow_refs);
    }
    case PEAT_TRACE_KIND_SCALAR: {
      const auto* sc = rec->body_as_Scalar();
      if (sc == nullptr) return "frame kind 'scalar' but the metadata holds another record type";
      if (sc->name() == nullptr) return "scalar record without a name";
      return check_str(sc->name(), "scalar name");
    }
    case PEAT_TRACE_KIND_STEP:
      return rec->body_as_StepMarker() ? "" : "frame kind 'step' but the metadata holds another record type";
    case kKindIndex: {
      const auto* ix = rec->body_as_Index();
      if (ix == nullptr) return "frame kind 'index' but the metadata holds another record type";
      if (payload_len != 0) return "index record with a payload";
      if (misaligned(ix->offsets())) return "index offsets vector is not 8-byte aligned";
      if (misaligned(ix->seqs())) return "index seqs vector is not 8-byte aligned";
      return {};
    }
    default:
      return fmt::format("unknown record kind {}", kind);
  }
}

// Decoded bytes of all tensors of a checked record (sizes checked, no overflow
// past INT64_MAX each; the sum saturates).
uint64_t raw_total_of(const fb::Record* rec, uint16_t kind) {
  uint64_t total = 0;
  const auto add = [&](const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* v) {
    if (v == nullptr) return;
    for (uint32_t i = 0; i < v->size(); ++i)
      if (__builtin_add_overflow(total, v->Get(i)->raw_bytes(), &total)) total = UINT64_MAX;
  };
  if (kind == PEAT_TRACE_KIND_OP) {
    add(rec->body_as_OpInvocation()->inputs());
    add(rec->body_as_OpInvocation()->outputs());
  } else if (kind == PEAT_TRACE_KIND_CHECKPOINT) {
    add(rec->body_as_Checkpoint()->tensors());
  }
  return total;
}

}  // namespace

uint64_t default_max_record_bytes() noexcept {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const uint64_t phys = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  return std::max(phys / 8, uint64_t{256} << 20);
}

Reader::Reader(std::string path, const peat_trace_reader_options_t& options, bool recover)
    : path_(std::move(path)), options_(options) {
  if (options_.max_meta_bytes < 1024 || options_.max_meta_bytes > kMaxMetaBytes)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "options.max_meta_bytes is {}; it must be in [1024, {}]",
         options_.max_meta_bytes, kMaxMetaBytes);
  if (options_.max_record_bytes == 0) options_.max_record_bytes = default_max_record_bytes();
  // O_NONBLOCK: a FIFO without a writer would block open() before the
  // regular-file check below could refuse it.
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) {
    const int err = errno;
    fail(err == ENOENT ? PEAT_STATUS_NOT_FOUND : PEAT_STATUS_IO_ERROR, "{}: cannot open: {}", path_,
         std::strerror(err));
  }
  try {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail(PEAT_STATUS_IO_ERROR, "{}: cannot stat: {}", path_, std::strerror(errno));
    if (!S_ISREG(st.st_mode)) fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: not a regular file", path_);
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
    file_size_ = static_cast<uint64_t>(st.st_size);
    recovery_.file_bytes = file_size_;

    // ---- header
    if (file_size_ < kHeaderFixed)
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: header at byte 0: the file has {} bytes, fewer than the {}-byte header",
           path_, file_size_, kHeaderFixed);
    unsigned char head[kHeaderFixed];
    read_at(0, head, sizeof head);
    if (std::memcmp(head, kFileMagic, 8) != 0)
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: header at byte 0: bad magic (not a PEAT trace)", path_);
    major_ = get_u16(head + 8);
    minor_ = get_u16(head + 10);
    if (major_ != PEAT_TRACE_FORMAT_MAJOR)
      fail(PEAT_STATUS_VERSION_MISMATCH, "{}: header at byte 8: format version {}.{}, this library reads {}.x", path_,
           major_, minor_, PEAT_TRACE_FORMAT_MAJOR);
    const uint32_t meta_len = get_u32(head + 16);
    if (meta_len == 0 || meta_len > options_.max_meta_bytes || kHeaderFixed + pad8(meta_len) > file_size_)
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: header at byte 16: metadata length {} is out of bounds (file has {} bytes)",
           path_, meta_len, file_size_);
    header_meta_ = std::make_unique<uint64_t[]>(pad8(meta_len) / 8);
    read_at(kHeaderFixed, header_meta_.get(), meta_len);
    if (frame_checksum(head, header_meta_.get(), meta_len) != get_u64(head + 24))
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: header at byte 0: checksum mismatch", path_);
    {
      flatbuffers::Verifier verifier(reinterpret_cast<const uint8_t*>(header_meta_.get()), meta_len);
      if (!verifier.VerifyBuffer<fb::RunInfo>(nullptr))
        fail(PEAT_STATUS_CORRUPT_DATA, "{}: header at byte {}: run metadata fails FlatBuffers verification", path_,
             kHeaderFixed);
    }
    run_info_ = flatbuffers::GetRoot<fb::RunInfo>(header_meta_.get());
    if (const auto* tags = run_info_->tags())
      for (uint32_t i = 0; i < tags->size(); ++i) {
        if (tags->Get(i) == nullptr)
          fail(PEAT_STATUS_CORRUPT_DATA, "{}: header: tag {} is null", path_, i);
        std::string why = check_str(tags->Get(i)->key(), fmt::format("tag {} key", i));
        if (why.empty()) why = check_str(tags->Get(i)->value(), fmt::format("tag {} value", i));
        if (!why.empty()) fail(PEAT_STATUS_CORRUPT_DATA, "{}: header at byte {}: {}", path_, kHeaderFixed, why);
      }
    for (const auto& [field, name] : {std::pair{run_info_->framework(), "framework"}, {run_info_->device(), "device"},
                                      {run_info_->vendor(), "vendor"}, {run_info_->library_version(), "library_version"},
                                      {run_info_->run_name(), "run_name"}}) {
      const std::string why = check_str(field, name);
      if (!why.empty()) fail(PEAT_STATUS_CORRUPT_DATA, "{}: header at byte {}: {}", path_, kHeaderFixed, why);
    }
    const uint64_t first = kHeaderFixed + pad8(meta_len);
    header_bytes_ = first;
    recovery_.valid_bytes = first;

    if (recover) {
      uint64_t pos = first, file_record = 0, last_seq = 0;
      bool have_last = false;
      for (;; ++file_record) {
        if (pos == file_size_) {
          recovery_.stop_reason = "end of file without a footer index";
          break;
        }
        RecordEntry e;
        std::string why;
        Frame got = read_frame(pos, file_size_, e, why);
        if (got == Frame::kDamaged) {
          recovery_.stop_reason = fmt::format("record {} at byte {}: {}", file_record, pos, why);
          break;
        }
        if (got == Frame::kOk && e.kind == kKindIndex) {
          // A clean end: the index must be followed by a sound trailer.
          const uint64_t end = pos + e.bytes;
          unsigned char tr[kTrailerSize];
          if (end + kTrailerSize == file_size_) {
            read_at(end, tr, sizeof tr);
            if (std::memcmp(tr, kTrailerMagic, 8) == 0 && checksum(tr, 24) == get_u64(tr + 24) &&
                get_u64(tr + 8) == pos && get_u64(tr + 16) == file_record) {
              recovery_.complete = true;
              recovery_.valid_bytes = file_size_;
              break;
            }
          }
          recovery_.stop_reason = fmt::format("index record at byte {} is not followed by a sound trailer", pos);
          break;
        }
        if (got == Frame::kOk) {
          why = check_seq(e, have_last, last_seq, nullptr);
          if (!why.empty()) got = Frame::kDefect;
        }
        pos += e.bytes;
        recovery_.valid_bytes = pos;
        if (got != Frame::kOk) {  // intact frame: skip the record, keep what follows
          skipped_.push_back({file_record, e.offset, fmt::format("record {} at byte {}: {}", file_record, e.offset, why)});
          continue;
        }
        if (e.has_seq) have_last = true, last_seq = e.seq;
        entries_.push_back(std::move(e));
      }
      recovery_.records = entries_.size();
      if (!skipped_.empty())
        recovery_.stop_reason += fmt::format("{}{} intact record(s) skipped, the first: {}",
                                             recovery_.stop_reason.empty() ? "" : "; ", skipped_.size(), skipped_[0].why);
      return;
    }

    // ---- complete file: trailer, index, then every record against the index
    const char* no_footer = "no footer index (the writer did not close the file; peat_trace_recover reads it)";
    if (file_size_ < first + kTrailerSize)
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: byte {}: {}", path_, file_size_, no_footer);
    const uint64_t trailer_at = file_size_ - kTrailerSize;
    unsigned char tr[kTrailerSize];
    read_at(trailer_at, tr, sizeof tr);
    if (std::memcmp(tr, kTrailerMagic, 8) != 0)
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: byte {}: {}", path_, trailer_at, no_footer);
    if (checksum(tr, 24) != get_u64(tr + 24))
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: footer at byte {}: checksum mismatch", path_, trailer_at);
    const uint64_t index_at = get_u64(tr + 8);
    const uint64_t count = get_u64(tr + 16);
    if (index_at < first || index_at > trailer_at || (index_at - first) / kFrameFixed < count)
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: footer at byte {}: index offset {} / record count {} are out of bounds",
           path_, trailer_at, index_at, count);
    RecordEntry index_entry;
    std::string why;
    if (read_frame(index_at, trailer_at, index_entry, why) != Frame::kOk)
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: index record at byte {}: {}", path_, index_at, why);
    if (index_entry.kind != kKindIndex || index_at + index_entry.bytes != trailer_at)
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: index record at byte {}: not an index record ending at the footer", path_,
           index_at);
    const fb::Index* index = index_entry.record->body_as_Index();
    if (index->offsets() == nullptr || index->kinds() == nullptr || index->offsets()->size() != count ||
        index->kinds()->size() != count)
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: index record at byte {}: it does not list {} records", path_, index_at,
           count);
    const bool sequenced = minor_ >= kMinorWithSeq;
    if (sequenced && (index->seqs() == nullptr || index->seqs()->size() != count))
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: index record at byte {}: it does not list the sequence numbers of {} records",
           path_, index_at, count);
    entries_.reserve(count);
    uint64_t pos = first, last_seq = 0;
    for (uint64_t i = 0; i < count; ++i) {
      if (index->offsets()->Get(static_cast<uint32_t>(i)) != pos)
        fail(PEAT_STATUS_CORRUPT_DATA, "{}: record {} at byte {}: the index places it at byte {}", path_, i, pos,
             index->offsets()->Get(static_cast<uint32_t>(i)));
      RecordEntry e;
      const Frame got = read_frame(pos, index_at, e, why);
      if (got == Frame::kDamaged || got == Frame::kDefect) bad(i, pos, why);
      if (e.kind == kKindIndex || e.kind != index->kinds()->Get(static_cast<uint32_t>(i)))
        bad(i, pos, fmt::format("kind {} differs from the index's {}", e.kind, index->kinds()->Get(static_cast<uint32_t>(i))));
      const uint64_t indexed = sequenced ? index->seqs()->Get(static_cast<uint32_t>(i)) : 0;
      if (sequenced && i > 0 && indexed <= last_seq)
        bad(i, pos, fmt::format("the index gives sequence number {} after {} (records out of order)", indexed, last_seq));
      last_seq = indexed;
      pos += e.bytes;
      if (got == Frame::kOverLimit) {  // intact, but above this reader's limit: skip it, read on
        skipped_.push_back({i, e.offset, fmt::format("record {} at byte {}: {}", i, e.offset, why)});
        continue;
      }
      why = check_seq(e, false, 0, sequenced ? &indexed : nullptr);
      if (!why.empty()) bad(i, e.offset, why);
      entries_.push_back(std::move(e));
    }
    if (pos != index_at)
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: byte {}: {} unindexed bytes before the index record", path_, pos,
           index_at - pos);
    recovery_.complete = true;
    recovery_.records = entries_.size();
    recovery_.valid_bytes = file_size_;
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

Reader::~Reader() {
  if (fd_ >= 0) ::close(fd_);
}

void Reader::bad(uint64_t record, uint64_t offset, const std::string& what) const {
  fail(PEAT_STATUS_CORRUPT_DATA, "{}: record {} at byte {}: {}", path_, record, offset, what);
}

void Reader::read_at(uint64_t offset, void* dst, std::size_t size) const {
  auto* p = static_cast<unsigned char*>(dst);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd_, p + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(PEAT_STATUS_IO_ERROR, "{}: reading {} bytes at byte {} failed: {}", path_, size, offset, std::strerror(errno));
    if (n == 0)
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: byte {}: unexpected end of file (the file shrank while open?)", path_,
           offset + done);
    done += static_cast<std::size_t>(n);
  }
}

Reader::Frame Reader::read_frame(uint64_t offset, uint64_t limit, RecordEntry& out, std::string& why) const {
  if (offset > limit || limit - offset < kFrameFixed) {
    why = fmt::format("truncated frame ({} bytes left, a frame header has {})", limit - std::min(offset, limit),
                      kFrameFixed);
    return Frame::kDamaged;
  }
  unsigned char head[kFrameFixed];
  read_at(offset, head, sizeof head);
  if (get_u32(head) != kRecordMagic) {
    why = "bad record magic";
    return Frame::kDamaged;
  }
  const uint16_t kind = get_u16(head + 4);
  const uint32_t meta_len = get_u32(head + 8);
  const uint64_t payload_len = get_u64(head + 16);
  if (meta_len == 0 || meta_len > kMaxMetaBytes) {
    why = fmt::format("metadata length {} is out of bounds (limit {})", meta_len, kMaxMetaBytes);
    return Frame::kDamaged;
  }
  const uint64_t room = limit - offset - kFrameFixed;
  if (pad8(meta_len) > room || payload_len > room - pad8(meta_len) ||
      pad8(payload_len) > room - pad8(meta_len)) {
    why = fmt::format("record with {} metadata and {} payload bytes extends past byte {}", meta_len, payload_len, limit);
    return Frame::kDamaged;
  }
  out.offset = offset;
  out.bytes = kFrameFixed + pad8(meta_len) + pad8(payload_len);
  out.payload_offset = offset + kFrameFixed + pad8(meta_len);
  out.payload_len = payload_len;
  out.kind = kind;
  if (meta_len > options_.max_meta_bytes) {
    // Too large for this reader: check the frame in bounded chunks, so that a
    // sound record is skipped (and the records after it read) while damage is
    // still told apart.
    XXH3_state_t* state = XXH3_createState();
    if (state == nullptr) throw std::bad_alloc();
    std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> guard(state, XXH3_freeState);
    XXH3_64bits_reset(state);
    XXH3_64bits_update(state, head, 24);
    std::vector<unsigned char> chunk(std::min<std::size_t>(meta_len, std::size_t{1} << 20));
    for (uint64_t done = 0; done < meta_len;) {
      const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(chunk.size(), meta_len - done));
      read_at(offset + kFrameFixed + done, chunk.data(), n);
      XXH3_64bits_update(state, chunk.data(), n);
      done += n;
    }
    if (XXH3_64bits_digest(state) != get_u64(head + 24)) {
      why = "checksum mismatch";
      return Frame::kDamaged;
    }
    why = fmt::format("metadata of {} bytes is above this reader's limit (max_meta_bytes {}); record skipped",
                      meta_len, options_.max_meta_bytes);
    return Frame::kOverLimit;
  }
  auto meta = std::make_unique<uint64_t[]>(pad8(meta_len) / 8);
  read_at(offset + kFrameFixed, meta.get(), meta_len);
  if (frame_checksum(head, meta.get(), meta_len) != get_u64(head + 24)) {
    why = "checksum mismatch";
    return Frame::kDamaged;
  }
  flatbuffers::Verifier verifier(reinterpret_cast<const uint8_t*>(meta.get()), meta_len);
  if (!fb::VerifyRecordBuffer(verifier)) {
    why = "metadata fails FlatBuffers verification";
    return Frame::kDefect;
  }
  const fb::Record* rec = fb::GetRecord(meta.get());
  why = check_body(rec, kind, payload_len, minor_ >= kMinorWithRefs);
  if (!why.empty()) return Frame::kDefect;
  out.raw_total = raw_total_of(rec, kind);
  out.has_seq = rec->seq().has_value();
  out.seq = rec->seq().value_or(0);
  out.meta = std::move(meta);
  out.record = rec;
  return Frame::kOk;
}

std::string Reader::check_seq(const RecordEntry& e, bool have_last, uint64_t last, const uint64_t* indexed) const {
  if (minor_ < kMinorWithSeq) return {};
  if (!e.has_seq) return fmt::format("no sequence number (format {}.{} records carry one)", major_, minor_);
  if (indexed != nullptr && e.seq != *indexed)
    return fmt::format("sequence number {} differs from the index's {} (records moved or swapped)", e.seq, *indexed);
  if (have_last && e.seq <= last)
    return fmt::format("sequence number {} after {} (records out of order)", e.seq, last);
  return {};
}

void Reader::read_into(uint64_t offset, void* dst, std::size_t size) const {
  if (offset > file_size_ || size > file_size_ - offset)
    fail(PEAT_STATUS_CORRUPT_DATA, "{}: bytes [{}, +{}) lie outside the {}-byte file", path_, offset, size, file_size_);
  if (size) read_at(offset, dst, size);
}

std::vector<std::byte> Reader::read_bytes(uint64_t offset, uint64_t size) const {
  if (offset > file_size_ || size > file_size_ - offset)
    fail(PEAT_STATUS_CORRUPT_DATA, "{}: bytes [{}, +{}) lie outside the {}-byte file", path_, offset, size, file_size_);
  std::vector<std::byte> out(static_cast<std::size_t>(size));
  if (size) read_at(offset, out.data(), out.size());
  return out;
}

void Reader::check_record_bytes(uint64_t index, uint64_t copies) const {
  const RecordEntry& e = entry(index);
  uint64_t need = 0;
  if (__builtin_mul_overflow(e.raw_total, copies, &need) || need > options_.max_record_bytes)
    fail(PEAT_STATUS_OUT_OF_MEMORY,
         "{}: record {} at byte {}: its tensors need {} decoded bytes (x{}), above the per-record memory cap "
         "options.max_record_bytes ({})",
         path_, index, e.offset, e.raw_total, copies, options_.max_record_bytes);
}

const RecordEntry& Reader::entry(uint64_t index) const {
  if (index >= entries_.size())
    fail(PEAT_STATUS_NOT_FOUND, "{}: record {} does not exist (the trace has {})", path_, index, entries_.size());
  return entries_[index];
}

const char* Reader::name_of(uint64_t index) const {
  const RecordEntry& e = entry(index);
  const flatbuffers::String* s = nullptr;
  switch (e.kind) {
    case PEAT_TRACE_KIND_OP: s = e.record->body_as_OpInvocation()->op(); break;
    case PEAT_TRACE_KIND_CHECKPOINT: s = e.record->body_as_Checkpoint()->name(); break;
    case PEAT_TRACE_KIND_SCALAR: s = e.record->body_as_Scalar()->name(); break;
    default: return nullptr;
  }
  return s ? s->c_str() : "";
}

int64_t Reader::step_of(uint64_t index) const {
  const RecordEntry& e = entry(index);
  switch (e.kind) {
    case PEAT_TRACE_KIND_OP: return e.record->body_as_OpInvocation()->step();
    case PEAT_TRACE_KIND_CHECKPOINT: return e.record->body_as_Checkpoint()->step();
    case PEAT_TRACE_KIND_SCALAR: return e.record->body_as_Scalar()->step();
    default: return e.record->body_as_StepMarker()->step();
  }
}

bool Reader::matches(uint64_t index, const peat_trace_filter_t& f) const {
  const RecordEntry& e = entry(index);
  if (f.kinds != 0 && (f.kinds & (1u << e.kind)) == 0) return false;
  const int64_t step = step_of(index);
  if (step < f.step_min || step > f.step_max) return false;
  if (f.phase >= 0 && (e.kind != PEAT_TRACE_KIND_OP || e.record->body_as_OpInvocation()->phase() != f.phase))
    return false;
  if (f.op_glob != nullptr) {
    const char* name = name_of(index);
    if (name == nullptr || ::fnmatch(f.op_glob, name, 0) != 0) return false;
  }
  return true;
}

uint64_t Reader::tensor_count(uint64_t index, peat_trace_slot_t slot) const {
  const RecordEntry& e = entry(index);
  const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* v = nullptr;
  if (e.kind == PEAT_TRACE_KIND_OP && (slot == PEAT_TRACE_SLOT_INPUT || slot == PEAT_TRACE_SLOT_OUTPUT)) {
    const auto* op = e.record->body_as_OpInvocation();
    v = slot == PEAT_TRACE_SLOT_INPUT ? op->inputs() : op->outputs();
  } else if (e.kind == PEAT_TRACE_KIND_CHECKPOINT && slot == PEAT_TRACE_SLOT_CHECKPOINT) {
    v = e.record->body_as_Checkpoint()->tensors();
  } else {
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: record {} (kind {}) has no tensor slot {}", path_, index, e.kind, slot);
  }
  return v ? v->size() : 0;
}

const fb::Tensor& Reader::tensor(uint64_t index, peat_trace_slot_t slot, uint64_t t) const {
  const uint64_t n = tensor_count(index, slot);
  if (t >= n)
    fail(PEAT_STATUS_NOT_FOUND, "{}: record {} has {} {}; there is no {}[{}]", path_, index, n, slot_name(slot),
         slot_name(slot), t);
  const RecordEntry& e = entries_[index];
  const auto* v = slot == PEAT_TRACE_SLOT_CHECKPOINT ? e.record->body_as_Checkpoint()->tensors()
                  : slot == PEAT_TRACE_SLOT_INPUT    ? e.record->body_as_OpInvocation()->inputs()
                                                     : e.record->body_as_OpInvocation()->outputs();
  return *v->Get(static_cast<uint32_t>(t));
}

namespace {
// Position of a tensor in its record's order: inputs (or a checkpoint's
// tensors), then outputs.
uint64_t position(const RecordEntry& e, peat_trace_slot_t slot, uint64_t t) {
  if (slot != PEAT_TRACE_SLOT_OUTPUT) return t;
  const auto* in = e.record->body_as_OpInvocation()->inputs();
  return (in ? in->size() : 0) + t;
}
}  // namespace

TensorLoc Reader::resolve(uint64_t index, peat_trace_slot_t slot, uint64_t t) const {
  const fb::Tensor& td = tensor(index, slot, t);
  if (!td.ref_seq().has_value()) return {index, slot, t};
  const RecordEntry& e = entries_[index];
  const uint64_t seq = *td.ref_seq();
  const auto ref_slot = static_cast<peat_trace_slot_t>(td.ref_slot());
  const uint64_t ref_t = td.ref_index();
  const auto bad_ref = [&](const std::string& why) {
    fail(PEAT_STATUS_CORRUPT_DATA, "{}: record {} at byte {}: {}[{}] refers to {}[{}] of the record numbered {}: {}",
         path_, index, e.offset, slot_name(slot), t, slot_name(ref_slot), ref_t, seq, why);
  };
  // Records are listed in increasing sequence numbers: find the target's entry.
  const auto it = std::lower_bound(entries_.begin(), entries_.end(), seq,
                                   [](const RecordEntry& x, uint64_t s) { return x.seq < s; });
  if (seq > e.seq) bad_ref("a later record (references point backwards)");
  if (it == entries_.end() || it->seq != seq || !it->has_seq)
    bad_ref("this file does not hold that record (lost when the writer was killed, damaged, or left out of a "
            "recovered copy); the reference is not followed");
  const uint64_t target = static_cast<uint64_t>(it - entries_.begin());
  const bool op_slot = ref_slot == PEAT_TRACE_SLOT_INPUT || ref_slot == PEAT_TRACE_SLOT_OUTPUT;
  if ((it->kind == PEAT_TRACE_KIND_OP) != op_slot || (it->kind != PEAT_TRACE_KIND_OP && it->kind != PEAT_TRACE_KIND_CHECKPOINT))
    bad_ref(fmt::format("that record (kind {}) has no such slot", it->kind));
  if (ref_t >= tensor_count(target, ref_slot))
    bad_ref(fmt::format("that record has {} tensors there", tensor_count(target, ref_slot)));
  if (target == index && position(*it, ref_slot, ref_t) >= position(e, slot, t))
    bad_ref("not an earlier tensor of the same record");
  const fb::Tensor& stored = tensor(target, ref_slot, ref_t);
  if (stored.ref_seq().has_value()) bad_ref("that tensor is itself a reference (references name stored bytes)");
  if (stored.raw_bytes() != td.raw_bytes() || stored.dtype_code() != td.dtype_code() ||
      stored.dtype_bits() != td.dtype_bits() || stored.dtype_lanes() != td.dtype_lanes())
    bad_ref(fmt::format("its dtype or size ({} bytes) differs from this tensor's ({} bytes)", stored.raw_bytes(),
                        td.raw_bytes()));
  return {target, ref_slot, ref_t};
}

void Reader::load(uint64_t index, peat_trace_slot_t slot, uint64_t t, void* dst, std::size_t capacity) const {
  const TensorLoc loc = resolve(index, slot, t);
  index = loc.index, slot = loc.slot, t = loc.t;
  const fb::Tensor& td = tensor(index, slot, t);
  const RecordEntry& e = entries_[index];
  const uint64_t raw = td.raw_bytes();
  if (raw > capacity)
    fail(PEAT_STATUS_BUFFER_TOO_SMALL, "{}: record {}: {}[{}] needs {} bytes, the buffer has {}", path_, index,
         slot_name(slot), t, raw, capacity);
  if (raw > 0 && dst == nullptr) fail(PEAT_STATUS_INVALID_ARGUMENT, "destination buffer is NULL");
  const uint64_t at = e.payload_offset + td.payload_offset();
  const auto codec = static_cast<peat_trace_codec_t>(td.codec());
  const DLDataType dt{td.dtype_code(), td.dtype_bits(), td.dtype_lanes()};
  auto* out = static_cast<std::byte*>(dst);
  if (codec == PEAT_TRACE_CODEC_RAW) {
    if (raw) read_at(at, out, raw);
  } else {
    std::vector<std::byte> encoded(td.encoded_bytes());
    if (!encoded.empty()) read_at(at, encoded.data(), encoded.size());
    // The frame's own declared size, checked before decode allocates for it.
    if (!encoded.empty()) {
      const unsigned long long declared = ZSTD_getFrameContentSize(encoded.data(), encoded.size());
      if (declared == ZSTD_CONTENTSIZE_ERROR || (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != raw))
        fail(PEAT_STATUS_CORRUPT_DATA, "{}: record {} at byte {}: {}[{}] payload at byte {}: the zstd frame {} but the "
             "tensor declares {} bytes", path_, index, e.offset, slot_name(slot), t, at,
             declared == ZSTD_CONTENTSIZE_ERROR ? std::string("is not a zstd frame")
                                                : fmt::format("holds {} bytes", declared), raw);
    }
    std::vector<std::byte> scratch;
    const char* why = decode(codec, encoded.data(), encoded.size(), out, raw, element_size(dt), scratch);
    if (*why)
      fail(PEAT_STATUS_CORRUPT_DATA, "{}: record {} at byte {}: {}[{}] payload at byte {}: {}", path_, index, e.offset,
           slot_name(slot), t, at, why);
  }
  if (checksum(out, raw) != td.checksum())
    fail(PEAT_STATUS_CORRUPT_DATA, "{}: record {} at byte {}: {}[{}] payload at byte {}: checksum mismatch", path_,
         index, e.offset, slot_name(slot), t, at);
}

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
  const bool whole = raw <= kWholeDecodeBytes ||
                     (codec == PEAT_TRACE_CODEC_SHUFFLE_ZSTD && element_size(dtype) > kMaxStreams);
  if (whole) {
    if (raw > kWholeDecodeBytes && raw > options_.max_record_bytes)
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

peat_attr_t attr_view(const fb::Attr& a) noexcept {
  peat_attr_t v{};
  v.key = a.key() ? a.key()->c_str() : "";
  v.type = static_cast<peat_attr_type_t>(a.type());
  v.i = a.i();
  v.f = a.f();
  v.s = a.s() ? a.s()->c_str() : "";
  v.ints = a.ints() ? a.ints()->data() : nullptr;
  v.n_ints = a.ints() ? a.ints()->size() : 0;
  return v;
}

}  // namespace peat::impl::trace
