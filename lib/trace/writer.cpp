#include "lib/trace/writer.hpp"

#include "lib/core/error.hpp"
#include "lib/trace/format.hpp"

#include <cerrno>
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace peat::impl::trace {

// The periodic fdatasync, on a thread of its own so that the writer goes on
// appending while the disk flushes (see flush_periodically). One flush at a
// time; the first failure is kept and answers every later append and close.
class Writer::Flusher {
 public:
  // `flush` empty: fdatasync.
  Flusher(int fd, FlushFunction flush)
      : fd_(fd),
        flush_(flush ? std::move(flush) : [](int f) { return ::fdatasync(f) == 0 ? 0 : errno; }),
        thread_([this] { run(); }) {}
  ~Flusher() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Flusher(const Flusher&) = delete;
  Flusher& operator=(const Flusher&) = delete;

  // Asks for a flush of the bytes before `offset`; `what` names them in an
  // error. False (nothing asked) while the previous flush still runs.
  bool ask(uint64_t offset, std::string what) {
    std::lock_guard lock(mutex_);
    if (busy_) return false;
    busy_ = true;
    target_ = offset;
    what_ = std::move(what);
    cv_.notify_all();
    return true;
  }
  // Waits until no flush runs.
  void wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !busy_; });
  }
  uint64_t flushed_to() {
    std::lock_guard lock(mutex_);
    return flushed_to_;
  }
  // The first failure ("" when none).
  std::string error() {
    std::lock_guard lock(mutex_);
    return error_;
  }
  // False once fdatasync said the file system cannot flush this file.
  bool flushable() {
    std::lock_guard lock(mutex_);
    return flushable_;
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || busy_; });
      if (!busy_) return;  // stopping, nothing asked
      const uint64_t target = target_;
      lock.unlock();
      const int err = flush_(fd_);
      lock.lock();
      if (err == 0) {
        flushed_to_ = target;
      } else if (err == EINVAL) {  // a file system that cannot flush this file: nothing to overlap
        flushable_ = false;
      } else if (error_.empty()) {
        error_ = fmt::format("{} failed: {}", what_, std::generic_category().message(err));  // strerror is not thread-safe
      }
      busy_ = false;
      cv_.notify_all();
    }
  }

  const int fd_;
  const FlushFunction flush_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false, busy_ = false, flushable_ = true;
  uint64_t target_ = 0, flushed_to_ = 0;
  std::string what_, error_;
  std::thread thread_;  // last: started once the members above exist
};

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

void Writer::stop_flusher() noexcept { flusher_.reset(); }

void Writer::abandon() noexcept {
  stop_flusher();  // before the descriptor it flushes is closed
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
  // 32 MiB along the way). Flushing as the trace grows spreads that over the
  // recording, and bounds what a machine crash loses. The fdatasync runs on
  // the flusher thread: run here, it stopped the writer for as long as the
  // disk took, and the encoded records waited (recording_vs_limit: the
  // writer's appends and flushes took turns, and both cores sat idle for the
  // last 0.6 s of each 1 GiB recording). The writer waits only when a flush
  // is still running after another kFlushBytes, so at most twice that is
  // unflushed.
  constexpr uint64_t kFlushBytes = uint64_t{64} << 20;
  if (fd_ < 0) return;  // closed: write_all says so
  if (flusher_) {
    // Linux reports a failed write-back once: a later flush would succeed
    // over lost bytes, so the first failure stays the writer's answer.
    if (std::string error = flusher_->error(); !error.empty()) fail(PEAT_STATUS_IO_ERROR, "{}", error);
    if (!flusher_->flushable()) return;
  }
  if (offset_ - flush_asked_to_ < kFlushBytes) return;
  if (!flusher_) flusher_ = std::make_unique<Flusher>(fd_, flush_function_);
  const std::string what = fmt::format("{}: record {}: flushing the trace to disk (fdatasync of the bytes before {})",
                                       path_, offsets_.size(), offset_);
  if (!flusher_->ask(offset_, what)) {
    if (offset_ - flusher_->flushed_to() < 2 * kFlushBytes) return;  // asked again at the next record
    flusher_->wait();
    if (std::string error = flusher_->error(); !error.empty()) fail(PEAT_STATUS_IO_ERROR, "{}", error);
    if (!flusher_->flushable() || !flusher_->ask(offset_, what)) return;
  }
  flush_asked_to_ = offset_;
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
  if (flusher_) {
    flusher_->wait();
    if (std::string error = flusher_->error(); !error.empty()) {  // no footer over bytes a flush lost
      abandon();
      fail(PEAT_STATUS_IO_ERROR, "{}", error);
    }
    stop_flusher();
  }
  const std::vector<std::byte> footer = encode_footer(offsets_, kinds_, seqs_, offset_);
  write_all(footer.data(), footer.size(), "the footer index");
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) fail(PEAT_STATUS_IO_ERROR, "{}: closing the trace file failed: {}", path_, std::strerror(errno));
}

}  // namespace peat::impl::trace
