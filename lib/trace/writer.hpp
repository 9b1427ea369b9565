// peat::impl::trace::Writer — appends framed records to one trace file and writes
// the footer index on close. Not thread-safe: the profiler's writer thread is
// its only user. Every failure throws peat::impl::Error(IO_ERROR) naming the file,
// the record number, the byte offset where that record starts and the
// system's reason.
#pragma once

#include "lib/trace/record.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace peat::impl::trace {

class Writer {
 public:
  // Creates (or truncates) `path` and writes the header. `path` must be a
  // regular file or not exist yet: a FIFO or device is refused
  // (INVALID_ARGUMENT) without blocking in open().
  Writer(std::string path, const RunInfoData& info);
  // Same, with a header copied as it is from another trace (its bytes up to
  // the first record): the copy keeps the original run metadata and version.
  Writer(std::string path, const std::vector<std::byte>& header);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Appends one record from encode_record, stamping its sequence number;
  // returns its byte offset.
  uint64_t append(EncodedRecord& record);
  uint64_t append(EncodedRecord&& record) { return append(record); }
  // Same, numbered `seq` (larger than every number before it): the profiler
  // numbers records when they are submitted, so that a reference (format 1.2)
  // can name its target before the target is written; a record it could not
  // encode leaves a gap.
  uint64_t append(EncodedRecord& record, uint64_t seq);
  uint64_t append(EncodedRecord&& record, uint64_t seq) { return append(record, seq); }
  // Appends an intact frame of `size` bytes copied from another trace as it
  // is, with the sequence number it carries (`seq`, larger than every one
  // before it), in chunks of at most 4 MiB that `read(offset, dst, n)` fills.
  using ChunkReader = std::function<void(uint64_t offset, std::byte* dst, std::size_t n)>;
  uint64_t append_copy(uint64_t size, uint16_t kind, uint64_t seq, const ChunkReader& read);
  // What the periodic flush runs on the file descriptor: returns 0, or the
  // errno value of its failure. fdatasync by default; tests substitute one
  // that blocks or fails. Set it before the first append.
  using FlushFunction = std::function<int(int fd)>;
  void set_flush_function(FlushFunction flush) { flush_function_ = std::move(flush); }
  // Writes the footer index and closes the file, after any flush still
  // running; a failed flush fails it (IO_ERROR) with no footer written.
  // Idempotent.
  void close();
  // Closes the file descriptor without writing the footer.
  void abandon() noexcept;

  const std::string& path() const noexcept { return path_; }
  uint64_t bytes() const noexcept { return offset_; }
  uint64_t records() const noexcept { return offsets_.size(); }
  bool is_open() const noexcept { return fd_ >= 0; }

 private:
  void open_file();
  void write_all(const std::byte* data, std::size_t size, const char* what);
  // `start`: where the record being written starts (cut back to it on failure).
  void write_all(const std::byte* data, std::size_t size, const char* what, uint64_t start);
  uint64_t add(const EncodedRecord& record, uint64_t seq);
  void start_writeback() noexcept;  // asks the kernel to write back what was appended since the last call
  void flush_periodically();        // asks for an fdatasync once kFlushBytes were appended since the last one
  void stop_flusher() noexcept;     // waits for a flush in flight and ends the flusher thread

  class Flusher;  // writer.cpp: the thread that runs the periodic fdatasync

  std::string path_;
  int fd_ = -1;
  uint64_t offset_ = 0;
  uint64_t writeback_from_ = 0;
  uint64_t flush_asked_to_ = 0;  // offset the last periodic fdatasync asked for covers
  std::unique_ptr<Flusher> flusher_;  // started by the first periodic flush
  FlushFunction flush_function_;
  uint64_t next_seq_ = 0;
  std::vector<uint64_t> offsets_;
  std::vector<uint8_t> kinds_;
  std::vector<uint64_t> seqs_;
};

}  // namespace peat::impl::trace
