// Fuzz target: the FlatBuffers metadata of trace records and of the file
// header. Input: one selector byte, a 16-bit split, then bytes. Selector < 16:
// the bytes before the split are the metadata of one record of that frame
// kind, the rest its payload, framed with correct checksums and followed by a
// correct footer. Selector >= 16: the bytes are the header's RunInfo.
#include "trace/format.hpp"
#include "trace/record.hpp"
#include "trace/codec.hpp"
#include "fuzz_input.hpp"
#include "trace_walk.hpp"

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using namespace peat::impl::trace;

// A format 1.0 header: its records carry no sequence number, so a fuzzed
// record's metadata needs none to reach every accessor of the walk.
std::vector<std::byte> header() {
  RunInfoData info;
  info.framework = "fuzz";
  info.run_name = "fuzz";
  std::vector<std::byte> out = encode_header(info);
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  put_u16(p + 10, 0);
  const uint32_t meta_len = get_u32(p + 16);
  std::vector<unsigned char> covered(24 + meta_len);
  std::memcpy(covered.data(), p, 24);
  std::memcpy(covered.data() + 24, p + kHeaderFixed, meta_len);
  put_u64(p + 24, checksum(covered.data(), covered.size()));
  return out;
}

std::vector<std::byte> header_with_meta(const std::vector<uint8_t>& meta) {
  std::vector<std::byte> out(kHeaderFixed + pad8(meta.size()));
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  std::memcpy(p, kFileMagic, 8);
  put_u16(p + 8, PEAT_TRACE_FORMAT_MAJOR);
  put_u16(p + 10, PEAT_TRACE_FORMAT_MINOR);
  put_u32(p + 16, static_cast<uint32_t>(meta.size()));
  std::vector<unsigned char> covered(24 + meta.size());
  std::memcpy(covered.data(), p, 24);
  if (!meta.empty()) {
    std::memcpy(covered.data() + 24, meta.data(), meta.size());
    std::memcpy(p + kHeaderFixed, meta.data(), meta.size());
  }
  put_u64(p + 24, checksum(covered.data(), covered.size()));
  return out;
}

void append(std::vector<std::byte>& out, const std::vector<std::byte>& more) {
  out.insert(out.end(), more.begin(), more.end());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  peat::fuzz::Input in(data, size);
  const uint8_t selector = in.byte();
  std::vector<std::byte> file;
  if (selector >= 16) {
    file = header_with_meta(in.rest());
    // one well-formed step record after it, and the footer
    EncodedRecord step = encode_record(StepData{3, 7}, PEAT_TRACE_CODEC_RAW, 0);
    stamp_seq(step.frame, 0);
    const uint64_t at = file.size();
    append(file, step.frame);
    append(file, encode_footer({at}, {static_cast<uint8_t>(step.kind)}, {0}, file.size()));
  } else {
    const std::size_t split = in.take<uint16_t>();
    const std::vector<uint8_t> meta = in.bytes(split);
    const std::vector<uint8_t> rest = in.rest();
    std::vector<std::byte> payload(rest.size());
    if (!rest.empty()) std::memcpy(payload.data(), rest.data(), rest.size());
    file = header();
    const uint64_t at = file.size();
    append(file, frame(selector, meta.data(), meta.size(), payload));
    append(file, encode_footer({at}, {selector}, {}, file.size()));
  }
  int fd = -1;
  char path[64];
  if (!peat::fuzz::memory_file(file.data(), file.size(), fd, path)) return 0;
  peat::fuzz::walk_trace_file(path);
  close(fd);
  return 0;
}
