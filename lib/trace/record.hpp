// In-memory form of trace records on the writing side, and their encoding
// into framed bytes (docs/trace-format.md). The profiler fills these structs;
// tests use them to write traces directly.
#pragma once

#include <peat/trace.h>

#include "lib/core/byte_buffer.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace peat::impl::trace {

// Where the decoded bytes of a reference tensor are stored (format 1.2):
// tensor `index` of list `slot` of the record numbered `seq`.
struct TensorRef {
  uint64_t seq = 0;
  peat_trace_slot_t slot = PEAT_TRACE_SLOT_INPUT;
  uint32_t index = 0;
};

struct TensorData {
  std::string name;
  DLDataType dtype{};
  std::vector<int64_t> shape;
  DLDevice device{kDLCPU, 0};
  ByteBuffer bytes;              // compact row-major host copy, numel * element size bytes
  std::vector<int64_t> strides;  // the logical layout's element strides; empty = compact row-major
  int64_t storage_offset = 0;    // elements from the storage start (DLTensor byte_offset / element size)
  // Set: a reference to bytes already in the file; `bytes` is then empty and
  // the record carries no payload for this tensor.
  std::optional<TensorRef> ref;
  // Set (format 1.3): an earlier version of this tensor stored whole in the
  // file, and its bytes; with the SHUFFLE_ZSTD codec the tensor is written as
  // an XOR delta against it when that pays (trace/delta.hpp), whole otherwise.
  std::optional<TensorRef> base;
  std::shared_ptr<const ByteBuffer> base_bytes;
  // Counts the versions against this base that were not worth a delta (the
  // profiler stops trying a position that keeps missing).
  std::shared_ptr<std::atomic<uint32_t>> base_misses;
};

struct AttrData {
  std::string key;
  peat_attr_type_t type = PEAT_ATTR_INT;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
};

struct OpData {
  std::string op;
  peat_phase_t phase = PEAT_PHASE_FORWARD;
  std::string module_path;
  int64_t step = 0;
  uint64_t call_index = 0;
  std::vector<AttrData> attrs;
  std::vector<TensorData> inputs;
  std::vector<TensorData> outputs;
};

struct CheckpointData {
  std::string name;
  int64_t step = 0;
  std::vector<TensorData> tensors;
};

struct ScalarData {
  std::string name;
  int64_t step = 0;
  double value = 0;
};

struct StepData {
  int64_t step = 0;
  uint64_t unix_ns = 0;
};

using RecordData = std::variant<OpData, CheckpointData, ScalarData, StepData>;

struct RunInfoData {
  std::string framework;
  std::string device;
  std::string vendor;
  std::string library_version;
  std::string run_name;
  int32_t rank = 0;
  int32_t world_size = 1;
  uint64_t created_unix_ns = 0;
  std::vector<std::pair<std::string, std::string>> tags;
};

// A record ready to be appended: its frame, written as `frame` then the
// payload parts in order. encode_record keeps the payload apart (frame holds
// the fixed part and the metadata) and in one part per stored tensor, so that
// the encoded tensors are never copied once more into one buffer (and, for an
// rvalue record, each is encoded within its own buffer); a frame built whole
// (frame() below) leaves payload empty.
struct EncodedRecord {
  uint16_t kind = 0;
  std::vector<std::byte> frame;                  // the whole frame, or its head when payload is set
  std::vector<ByteBuffer> payload;               // the payload's parts, each a multiple of 8 bytes, or none
  uint64_t raw_bytes = 0;                        // decoded tensor bytes it carries
  uint64_t payload_bytes() const noexcept;       // the parts' bytes together
};

// Element size in bytes of a dtype as the trace stores it: ceil(bits * lanes / 8).
std::size_t element_size(DLDataType dtype) noexcept;

// Decoded bytes of a tensor of this dtype and shape (checked by check_tensor).
uint64_t tensor_bytes(const TensorData& tensor) noexcept;

// Checks a tensor's dtype, shape and byte count; throws INVALID_ARGUMENT naming `what`.
void check_tensor(const TensorData& tensor, const std::string& what);

// Checks what a default reader would refuse, before anything is encoded:
// every string must be valid UTF-8, and an upper bound of the record's
// metadata must stay within kDefaultMaxMetaBytes. Throws INVALID_ARGUMENT
// naming the field. encode_record calls it; the profiler calls it on the
// caller's thread so that a record it acknowledges is one it can write.
void check_record(const RecordData& record);

// Upper bound of the FlatBuffer metadata bytes of `record`.
uint64_t meta_bytes_bound(const RecordData& record) noexcept;

// Throws INVALID_ARGUMENT when `text` (the field `what`) is not valid UTF-8.
void check_utf8(std::string_view text, const std::string& what);

// Encodes one record (tensors with `codec` at zstd `level`). Thread-safe.
// The record's sequence number is a placeholder the Writer stamps (stamp_seq).
EncodedRecord encode_record(const RecordData& record, peat_trace_codec_t codec, int level);
// The same record, encoded within the stored tensors' own byte buffers, which
// become the payload parts (the profiler's tensor copies: their pages are
// touched already, and no compressed byte is copied again). The tensors'
// `bytes` are left empty; the rest of `record` is unchanged.
EncodedRecord encode_record(RecordData&& record, peat_trace_codec_t codec, int level);

// Sets the sequence number (Record.seq) of a framed record whose metadata
// carries one and updates the frame checksum; false when it carries none.
bool stamp_seq(std::vector<std::byte>& frame, uint64_t seq);

// The head of a record's frame (fixed part and FlatBuffer metadata, padded to
// 8 bytes) whose payload of `payload_bytes` follows it in the file.
std::vector<std::byte> frame_head(uint16_t kind, const uint8_t* meta, std::size_t meta_len, uint64_t payload_bytes);

// Frames FlatBuffer metadata and a payload as one record (kind is the frame's
// kind field). Exposed for tests that build unusual records.
std::vector<std::byte> frame(uint16_t kind, const uint8_t* meta, std::size_t meta_len,
                             const std::vector<std::byte>& payload);

// Encodes the file header carrying `info`.
std::vector<std::byte> encode_header(const RunInfoData& info);

// Encodes the footer: the index record followed by the trailer. `index_offset`
// is where the index record will start.
// `seqs` (sequence numbers, parallel to offsets) is written when not empty.
std::vector<std::byte> encode_footer(const std::vector<uint64_t>& offsets, const std::vector<uint8_t>& kinds,
                                     const std::vector<uint64_t>& seqs, uint64_t index_offset);

uint64_t now_unix_ns() noexcept;

}  // namespace peat::impl::trace
