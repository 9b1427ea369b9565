// peat::trace::Reader — opens, checks and reads a trace file (peat/trace.h).
// Immutable after construction; every const member is safe to call from
// several threads (reads use pread).
#pragma once

#include <peat/trace.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace peat::fb {
struct Record;
struct RunInfo;
struct Tensor;
}  // namespace peat::fb

namespace peat::trace {

struct RecordEntry {
  uint64_t offset = 0;          // frame offset in the file
  uint64_t bytes = 0;           // frame bytes
  uint64_t payload_offset = 0;  // absolute offset of the payload section
  uint64_t payload_len = 0;
  uint16_t kind = 0;
  std::unique_ptr<uint64_t[]> meta;  // 8-aligned copy of the FlatBuffer
  const fb::Record* record = nullptr;
};

struct Recovery {
  bool complete = false;
  uint64_t records = 0;
  uint64_t valid_bytes = 0;
  uint64_t file_bytes = 0;
  std::string stop_reason;  // why the scan stopped ("" at a clean footer)
};

class Reader {
 public:
  // recover == false: the file must be complete; any defect throws.
  // recover == true: reads up to the first incomplete or damaged record.
  Reader(std::string path, const peat_trace_reader_options_t& options, bool recover);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  const std::string& path() const noexcept { return path_; }
  const Recovery& recovery() const noexcept { return recovery_; }
  uint16_t format_major() const noexcept { return major_; }
  uint16_t format_minor() const noexcept { return minor_; }
  const fb::RunInfo& run_info() const noexcept { return *run_info_; }

  uint64_t size() const noexcept { return entries_.size(); }
  const RecordEntry& entry(uint64_t index) const;  // throws NOT_FOUND

  // Record name used by filters: op / checkpoint / scalar name; nullptr otherwise.
  const char* name_of(uint64_t index) const;
  int64_t step_of(uint64_t index) const;
  bool matches(uint64_t index, const peat_trace_filter_t& filter) const;

  // Tensor list of a slot; throws INVALID_ARGUMENT when the slot does not apply.
  uint64_t tensor_count(uint64_t index, peat_trace_slot_t slot) const;
  const fb::Tensor& tensor(uint64_t index, peat_trace_slot_t slot, uint64_t t) const;
  void load(uint64_t index, peat_trace_slot_t slot, uint64_t t, void* dst, std::size_t capacity) const;
  uint64_t max_tensor_bytes() const noexcept { return options_.max_tensor_bytes; }

 private:
  [[noreturn]] void bad(uint64_t record, uint64_t offset, const std::string& what) const;
  void read_at(uint64_t offset, void* dst, std::size_t size) const;  // throws on short read
  // Reads and checks the frame at `offset` (bounded by `limit`); returns false and
  // sets `why` when it is not a complete, intact record.
  bool read_frame(uint64_t index, uint64_t offset, uint64_t limit, RecordEntry& out, std::string& why) const;

  std::string path_;
  peat_trace_reader_options_t options_;
  int fd_ = -1;
  uint64_t file_size_ = 0;
  uint16_t major_ = 0, minor_ = 0;
  std::unique_ptr<uint64_t[]> header_meta_;
  const fb::RunInfo* run_info_ = nullptr;
  std::vector<RecordEntry> entries_;
  Recovery recovery_;
};

}  // namespace peat::trace

struct peat_trace_reader : peat::trace::Reader {
  using peat::trace::Reader::Reader;
};
