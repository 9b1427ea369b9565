// peat::trace::Writer — appends framed records to one trace file and writes
// the footer index on close. Not thread-safe: the profiler's writer thread is
// its only user. Every failure throws peat::Error(IO_ERROR) naming the file,
// the record number, the byte offset and the system's reason.
#pragma once

#include "trace/record.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace peat::trace {

class Writer {
 public:
  // Creates (or truncates) `path` and writes the header.
  Writer(std::string path, const RunInfoData& info);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Appends one record; returns its byte offset.
  uint64_t append(const EncodedRecord& record);
  // Writes the footer index and closes the file. Idempotent.
  void close();
  // Closes the file descriptor without writing the footer.
  void abandon() noexcept;

  const std::string& path() const noexcept { return path_; }
  uint64_t bytes() const noexcept { return offset_; }
  uint64_t records() const noexcept { return offsets_.size(); }
  bool is_open() const noexcept { return fd_ >= 0; }

 private:
  void write_all(const std::byte* data, std::size_t size, const char* what);

  std::string path_;
  int fd_ = -1;
  uint64_t offset_ = 0;
  std::vector<uint64_t> offsets_;
  std::vector<uint8_t> kinds_;
};

}  // namespace peat::trace
