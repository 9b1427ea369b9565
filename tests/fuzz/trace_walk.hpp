// Opens a trace held in memory (through a memfd, so the reader's pread path is
// the one exercised) and calls every read accessor on every record: what a
// tool does with an untrusted trace. Failures must be statuses, never crashes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace peat::fuzz {

// Writes `size` bytes to a fresh memfd and returns its /proc/self/fd path in
// `path` (the caller closes `fd`). Returns false when memfd_create fails.
bool memory_file(const void* data, std::size_t size, int& fd, char (&path)[64]);

// Opens `path` strictly and in recovery mode and walks both readers.
void walk_trace_file(const char* path);

}  // namespace peat::fuzz
