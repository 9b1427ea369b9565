#include "lib/trace/writer.hpp"

#include "lib/core/error.hpp"
#include "lib/trace/format.hpp"

#include <cerrno>
#include <algorithm>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace peat::impl::trace {

Writer::Writer(std::string path, const RunInfoData& info) : path_(std::move(path)) {
  const std::vector<std::byte> header = encode_header(info);  // checks the strings before the file is created
  open_file();
  write_all(header.data(), header.size(), "the header");
}

Writer::Writer(std::string path, const std::vector<std::byte>& header) : path_(std::move(path)) {
  open_file();
  write_all(header.data(), header.size(), "the header");
}

void Writer::open_file() {
  // A FIFO without a reader would block open(O_WRONLY) forever: look first, and
  // open non-blocking so that one created in between fails (ENXIO) instead.
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: not a regular file (a trace is written to a regular file)", path_);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd_ < 0) {
    const int err = errno;
    fail(err == ENOENT ? PEAT_STATUS_NOT_FOUND : PEAT_STATUS_IO_ERROR, "{}: cannot create the trace file: {}", path_,
         std::strerror(err));
  }
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    abandon();
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: not a regular file (a trace is written to a regular file)", path_);
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
}

Writer::~Writer() { abandon(); }

void Writer::abandon() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Writer::write_all(const std::byte* data, std::size_t size, const char* what) {
  write_all(data, size, what, offset_);
}

void Writer::write_all(const std::byte* data, std::size_t size, const char* what, uint64_t start) {
  if (fd_ < 0) fail(PEAT_STATUS_BAD_STATE, "{}: the trace file is closed", path_);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd_, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      // Best effort: cut the partial record so the file ends at a record boundary.
      if (::ftruncate(fd_, static_cast<off_t>(start)) != 0) { /* the reader's recover copes */ }
      ::lseek(fd_, static_cast<off_t>(start), SEEK_SET);
      offset_ = start;
      // Named by where it starts (where the file now ends), which is what a
      // reader or `peat verify` reports for that record.
      fail(PEAT_STATUS_IO_ERROR, "{}: writing {} (starting at byte {}) failed: {}", path_, what, start,
           std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  offset_ += size;
}

void Writer::start_writeback() noexcept {
#ifdef __linux__
  // The kernel would otherwise keep a long recording's pages dirty until its
  // own thresholds (a tenth of the memory), and the disk would sit idle while
  // the trace is being compressed, then take it all at the end (fdatasync,
  // close, the next job). Asking for write-back every few MiB keeps the disk
  // busy alongside; it does not wait and does not change what is written.
  constexpr uint64_t kWritebackBytes = uint64_t{8} << 20;
  if (offset_ - writeback_from_ < kWritebackBytes) return;
  (void)::sync_file_range(fd_, static_cast<off_t>(writeback_from_), static_cast<off_t>(offset_ - writeback_from_),
                          SYNC_FILE_RANGE_WRITE);
  writeback_from_ = offset_;
#endif
}

void Writer::flush_periodically() {
  // A virtual disk's flush costs about the time to write what is dirty
  // (measured on the project's VM: fdatasync of 205 MB took 0.1 s at close
  // even with write-back asked for every 8 MiB, 0.01 s after a flush every
  // 32 MiB along the way). Flushing as the trace grows overlaps that with the
  // compression of the next records, and bounds what a machine crash loses.
  // It runs on the writer thread and before this record's bytes: an error
  // leaves the file ending with the last complete record.
  constexpr uint64_t kFlushBytes = uint64_t{64} << 20;
  // Linux reports a failed write-back once: a later flush would succeed over
  // lost bytes, so the first failure stays the writer's answer.
  if (!flush_error_.empty()) fail(PEAT_STATUS_IO_ERROR, "{}", flush_error_);
  if (fd_ < 0 || !flushable_ || offset_ - flushed_to_ < kFlushBytes) return;  // closed: write_all says so
  if (::fdatasync(fd_) != 0) {
    const int err = errno;
    if (err == EINVAL) {  // a file system that cannot flush this file: nothing to overlap
      flushable_ = false;
      return;
    }
    flush_error_ = fmt::format("{}: record {}: flushing the trace to disk (fdatasync of the bytes before {}) failed: {}",
                               path_, offsets_.size(), offset_, std::strerror(err));
    fail(PEAT_STATUS_IO_ERROR, "{}", flush_error_);
  }
  flushed_to_ = offset_;
}

uint64_t Writer::add(const EncodedRecord& record, uint64_t seq) {
  flush_periodically();
  const uint64_t at = offset_;
  const std::string what = fmt::format("record {}", offsets_.size());
  write_all(record.frame.data(), record.frame.size(), what.c_str(), at);
  for (const ByteBuffer& part : record.payload) write_all(part.data(), part.size(), what.c_str(), at);
  const uint16_t kind = record.kind;
  start_writeback();
  offsets_.push_back(at);
  kinds_.push_back(static_cast<uint8_t>(kind));
  seqs_.push_back(seq);
  next_seq_ = seq + 1;
  return at;
}

uint64_t Writer::append(EncodedRecord& record) { return append(record, next_seq_); }

uint64_t Writer::append(EncodedRecord& record, uint64_t seq) {
  if (!offsets_.empty() && seq < next_seq_)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: record {}: sequence number {} after {}", path_, offsets_.size(), seq,
         next_seq_ - 1);
  // Every encode_record output has the slot; frames tests build by hand may
  // not, and are written as they are (a reader then finds no number).
  stamp_seq(record.frame, seq);
  return add(record, seq);
}

uint64_t Writer::append_copy(uint64_t size, uint16_t kind, uint64_t seq, const ChunkReader& read) {
  if (!offsets_.empty() && seq < next_seq_)
    fail(PEAT_STATUS_INVALID_ARGUMENT, "{}: record {}: sequence number {} after {}", path_, offsets_.size(), seq,
         next_seq_ - 1);
  const uint64_t at = offset_;
  const std::string what = fmt::format("record {}", offsets_.size());
  std::vector<std::byte> chunk(static_cast<std::size_t>(std::min<uint64_t>(size, uint64_t{4} << 20)));
  for (uint64_t done = 0; done < size;) {  // bounded memory whatever the record's size
    const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(chunk.size(), size - done));
    read(done, chunk.data(), n);
    write_all(chunk.data(), n, what.c_str(), at);
    done += n;
  }
  offsets_.push_back(at);
  kinds_.push_back(static_cast<uint8_t>(kind));
  seqs_.push_back(seq);
  next_seq_ = seq + 1;
  return at;
}

void Writer::close() {
  if (fd_ < 0) return;
  if (!flush_error_.empty()) {  // no footer over bytes a flush lost
    abandon();
    fail(PEAT_STATUS_IO_ERROR, "{}", flush_error_);
  }
  const std::vector<std::byte> footer = encode_footer(offsets_, kinds_, seqs_, offset_);
  write_all(footer.data(), footer.size(), "the footer index");
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) fail(PEAT_STATUS_IO_ERROR, "{}: closing the trace file failed: {}", path_, std::strerror(errno));
}

}  // namespace peat::impl::trace
