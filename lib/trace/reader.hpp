// peat::impl::trace::Reader — opens, checks and reads a trace file (peat/trace.h).
// Immutable after construction; every const member is safe to call from
// several threads (reads use pread).
#pragma once

#include <peat/trace.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace peat::fb {
struct Attr;
struct Record;
struct RunInfo;
struct Tensor;
}  // namespace peat::fb

namespace peat::impl::trace {

// A recorded attribute as the C API hands it out: pointers into the reader's
// buffers, valid while the reader is open.
peat_attr_t attr_view(const fb::Attr& attr) noexcept;

// Name of a tensor slot in messages: "inputs", "outputs", "tensors".
const char* slot_name(peat_trace_slot_t slot) noexcept;

struct RecordEntry {
  uint64_t offset = 0;          // frame offset in the file
  uint64_t bytes = 0;           // frame bytes
  uint64_t payload_offset = 0;  // absolute offset of the payload section
  uint64_t payload_len = 0;
  uint64_t raw_total = 0;       // decoded bytes of all its tensors
  uint64_t seq = 0;             // Record.seq (format >= 1.1)
  bool has_seq = false;
  uint16_t kind = 0;
  std::unique_ptr<uint64_t[]> meta;  // 8-aligned copy of the FlatBuffer
  const fb::Record* record = nullptr;
};

// A record whose frame is intact but which this reader does not list.
struct Skipped {
  uint64_t file_record = 0;  // its number among the file's records
  uint64_t offset = 0;
  std::string why;  // "record N at byte B: reason"
};

// Default of peat_trace_reader_options_t.max_record_bytes: an eighth of the
// physical memory, at least 256 MiB.
uint64_t default_max_record_bytes() noexcept;

struct Recovery {
  bool complete = false;
  uint64_t records = 0;
  uint64_t valid_bytes = 0;
  uint64_t file_bytes = 0;
  std::string stop_reason;  // why the scan stopped ("" at a clean footer)
};

// Where a tensor's decoded bytes are stored: the tensor itself, or (format
// 1.2) the stored tensor a reference names.
struct TensorLoc {
  uint64_t index = 0;
  peat_trace_slot_t slot = PEAT_TRACE_SLOT_INPUT;
  uint64_t t = 0;
};

class Reader {
 public:
  // recover == false: the file must be complete; any defect throws. A record
  // whose metadata is above options.max_meta_bytes is skipped (listed by
  // skipped()) and the records after it are read.
  // recover == true: reads up to the first incomplete or damaged frame; a
  // record whose frame is intact but which cannot be used (above a limit,
  // content that fails the checks, out of sequence) is skipped.
  Reader(std::string path, const peat_trace_reader_options_t& options, bool recover);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  const std::string& path() const noexcept { return path_; }
  const Recovery& recovery() const noexcept { return recovery_; }
  uint16_t format_major() const noexcept { return major_; }
  uint16_t format_minor() const noexcept { return minor_; }
  const fb::RunInfo& run_info() const noexcept { return *run_info_; }
  const std::vector<Skipped>& skipped() const noexcept { return skipped_; }
  uint64_t header_bytes() const noexcept { return header_bytes_; }
  // `size` bytes of the file at `offset` (bounded by the file); throws on short read.
  std::vector<std::byte> read_bytes(uint64_t offset, uint64_t size) const;
  void read_into(uint64_t offset, void* dst, std::size_t size) const;  // same, into the caller's buffer

  uint64_t size() const noexcept { return entries_.size(); }
  const RecordEntry& entry(uint64_t index) const;  // throws NOT_FOUND

  // Record name used by filters: op / checkpoint / scalar name; nullptr otherwise.
  const char* name_of(uint64_t index) const;
  int64_t step_of(uint64_t index) const;
  bool matches(uint64_t index, const peat_trace_filter_t& filter) const;

  // Tensor list of a slot; throws INVALID_ARGUMENT when the slot does not apply.
  uint64_t tensor_count(uint64_t index, peat_trace_slot_t slot) const;
  const fb::Tensor& tensor(uint64_t index, peat_trace_slot_t slot, uint64_t t) const;
  // Resolves a reference (format 1.2) to the stored tensor it names, checking
  // that the target is in this reader's list, earlier in the file, stored, and
  // of the same dtype and size; a stored tensor resolves to itself. Throws
  // CORRUPT_DATA naming both tensors when the reference cannot be followed
  // (its record was lost in a crash, damaged, or skipped).
  TensorLoc resolve(uint64_t index, peat_trace_slot_t slot, uint64_t t) const;
  // The base of a delta tensor (format 1.3, codec XOR_DELTA_SHUFFLE_ZSTD), with
  // the same checks as resolve and the base neither a reference nor a delta;
  // nullopt for any other tensor. Throws CORRUPT_DATA naming both tensors when
  // the base cannot be followed (its record lost in a crash, damaged, skipped).
  std::optional<TensorLoc> base(uint64_t index, peat_trace_slot_t slot, uint64_t t) const;
  // Loads the decoded bytes of a tensor (following a reference).
  void load(uint64_t index, peat_trace_slot_t slot, uint64_t t, void* dst, std::size_t capacity) const;
  // Decodes a tensor and checks its checksum in bounded memory (chunks of a
  // few MiB, whatever the tensor's size): what verify and recovery need.
  void check_payload(uint64_t index, peat_trace_slot_t slot, uint64_t t) const;
  uint64_t max_tensor_bytes() const noexcept { return options_.max_tensor_bytes; }
  uint64_t max_record_bytes() const noexcept { return options_.max_record_bytes; }
  // Throws OUT_OF_MEMORY when record `index` holds more decoded bytes than
  // max_record_bytes (`copies`: how many copies of them the caller keeps).
  void check_record_bytes(uint64_t index, uint64_t copies = 1) const;

 private:
  [[noreturn]] void bad(uint64_t record, uint64_t offset, const std::string& what) const;
  void read_at(uint64_t offset, void* dst, std::size_t size) const;  // throws on short read
  // What read_frame found.
  enum class Frame {
    kOk,         // complete, intact, usable
    kDamaged,    // not a complete, intact frame: nothing after it can be found
    kDefect,     // intact frame (kind, offset and bytes set) whose content fails the checks
    kOverLimit   // intact frame (kind, offset and bytes set) above this reader's limits
  };
  // Reads and checks the frame at `offset` (bounded by `limit`); sets `why`
  // unless it is kOk.
  Frame read_frame(uint64_t offset, uint64_t limit, RecordEntry& out, std::string& why) const;
  // "" when the record's sequence number follows `last` (and matches the
  // index's `indexed` when given); what is wrong otherwise.
  std::string check_seq(const RecordEntry& e, bool have_last, uint64_t last, const uint64_t* indexed) const;
  // The stored tensor `to_t` of list `to_slot` of the record numbered `seq`
  // that tensor t of (index, slot) names, checked (earlier, present, stored,
  // same dtype and size; `delta`: not a delta either); `verb` words the error.
  TensorLoc locate(uint64_t index, peat_trace_slot_t slot, uint64_t t, uint64_t seq, peat_trace_slot_t to_slot,
                   uint64_t to_t, const char* verb, bool delta) const;

  std::string path_;
  peat_trace_reader_options_t options_;
  int fd_ = -1;
  uint64_t file_size_ = 0;
  uint16_t major_ = 0, minor_ = 0;
  std::unique_ptr<uint64_t[]> header_meta_;
  const fb::RunInfo* run_info_ = nullptr;
  uint64_t header_bytes_ = 0;
  std::vector<RecordEntry> entries_;
  std::vector<Skipped> skipped_;
  Recovery recovery_;
};

}  // namespace peat::impl::trace

struct peat_trace_reader : peat::impl::trace::Reader {
  using peat::impl::trace::Reader::Reader;
};
