#include "trace/writer.hpp"

#include "core/error.hpp"
#include "trace/format.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace peat::trace {

Writer::Writer(std::string path, const RunInfoData& info) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int err = errno;
    fail(err == ENOENT ? PEAT_STATUS_NOT_FOUND : PEAT_STATUS_IO_ERROR, "{}: cannot create the trace file: {}", path_,
         std::strerror(err));
  }
  const std::vector<std::byte> header = encode_header(info);
  write_all(header.data(), header.size(), "the header");
}

Writer::~Writer() { abandon(); }

void Writer::abandon() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Writer::write_all(const std::byte* data, std::size_t size, const char* what) {
  if (fd_ < 0) fail(PEAT_STATUS_BAD_STATE, "{}: the trace file is closed", path_);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd_, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      // Best effort: cut the partial record so the file ends at a record boundary.
      if (::ftruncate(fd_, static_cast<off_t>(offset_)) != 0) { /* the reader's recover copes */ }
      ::lseek(fd_, static_cast<off_t>(offset_), SEEK_SET);
      fail(PEAT_STATUS_IO_ERROR, "{}: writing {} at byte {} failed: {}", path_, what, offset_ + done,
           std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  offset_ += size;
}

uint64_t Writer::append(const EncodedRecord& record) {
  const uint64_t at = offset_;
  const std::string what = fmt::format("record {}", offsets_.size());
  write_all(record.frame.data(), record.frame.size(), what.c_str());
  offsets_.push_back(at);
  kinds_.push_back(static_cast<uint8_t>(record.kind));
  return at;
}

void Writer::close() {
  if (fd_ < 0) return;
  const std::vector<std::byte> footer = encode_footer(offsets_, kinds_, offset_);
  write_all(footer.data(), footer.size(), "the footer index");
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) fail(PEAT_STATUS_IO_ERROR, "{}: closing the trace file failed: {}", path_, std::strerror(errno));
}

}  // namespace peat::trace
