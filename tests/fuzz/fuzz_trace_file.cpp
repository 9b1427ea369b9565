// Fuzz target: a whole trace file from untrusted bytes, opened strictly and in
// recovery mode, every record and tensor read. Checksums cover headers and
// frames, so mutations mostly exercise the checks before them; the frame and
// metadata targets fix checksums up to reach deeper.
#include "trace_walk.hpp"

#include <unistd.h>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  int fd = -1;
  char path[64];
  if (!peat::fuzz::memory_file(data, size, fd, path)) return 0;
  peat::fuzz::walk_trace_file(path);
  close(fd);
  return 0;
}
