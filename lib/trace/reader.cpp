#include "lib/trace/reader.hpp"

#include "lib/core/error.hpp"
#include "lib/trace/codec.hpp"
#include "lib/trace/format.hpp"
#include "lib/trace/record.hpp"
#include "lib/trace/record_checks.hpp"
#include "trace/trace_generated.h"

#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

namespace peat::impl::trace {

namespace {

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
    // A trace of no records: its writer leaves out the empty list of sequence numbers.
    if (sequenced && count > 0 && (index->seqs() == nullptr || index->seqs()->size() != count))
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
  why = check_body(rec, kind, payload_len, minor_);
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

}  // namespace peat::impl::trace
