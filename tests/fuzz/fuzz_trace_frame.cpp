// Fuzz target: the record frames of a trace. The input is everything after a
// (valid, fixed) file header: frames, then maybe the footer index and the
// trailer, exactly as they lie in a file. Before opening, the harness rewrites
// every frame checksum and the trailer checksum that the input's own length
// fields locate, so that mutations of kinds, flags, lengths, metadata and
// payloads get past the checksum test into the parser.
#include "trace/format.hpp"
#include "trace/record.hpp"
#include "trace/codec.hpp"
#include "trace_walk.hpp"

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using namespace peat::impl::trace;

std::vector<std::byte> header() {
  RunInfoData info;
  info.framework = "fuzz";
  info.device = "host";
  info.vendor = "host";
  info.library_version = "0.1.0";
  info.run_name = "fuzz";
  info.tags = {{"k", "v"}};
  return encode_header(info);
}

// Rewrites the checksums the frames' own length fields point at.
void fix_checksums(unsigned char* p, std::size_t n) {
  std::size_t pos = 0;
  while (pos + kFrameFixed <= n) {
    if (n - pos == kTrailerSize && std::memcmp(p + pos, kTrailerMagic, 8) == 0) {
      put_u64(p + pos + 24, checksum(p + pos, 24));
      return;
    }
    const uint64_t meta_len = get_u32(p + pos + 8);
    const uint64_t payload_len = get_u64(p + pos + 16);
    if (meta_len > n - pos - kFrameFixed) return;
    std::vector<unsigned char> covered(24 + meta_len);
    std::memcpy(covered.data(), p + pos, 24);
    std::memcpy(covered.data() + 24, p + pos + kFrameFixed, meta_len);
    put_u64(p + pos + 24, checksum(covered.data(), covered.size()));
    const uint64_t body = pad8(meta_len) + pad8(payload_len);
    if (payload_len > n || body > n - pos - kFrameFixed) return;
    pos += kFrameFixed + body;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const std::vector<std::byte> head = header();
  std::vector<unsigned char> file(head.size() + size);
  std::memcpy(file.data(), head.data(), head.size());
  if (size) std::memcpy(file.data() + head.size(), data, size);
  fix_checksums(file.data() + head.size(), size);
  int fd = -1;
  char path[64];
  if (!peat::fuzz::memory_file(file.data(), file.size(), fd, path)) return 0;
  peat::fuzz::walk_trace_file(path);
  close(fd);
  return 0;
}
