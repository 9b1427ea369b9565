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

// Per-record memory cap of the walk's readers, and the bound of the peak RSS
// every walk checks (check_peak_rss: aborts above it).
inline constexpr uint64_t kWalkRecordCap = uint64_t{64} << 20;
inline constexpr uint64_t kPeakRssBound = 16 * kWalkRecordCap;

// Opens `path` strictly and in recovery mode and walks both readers, then
// checks the peak RSS.
void walk_trace_file(const char* path);
void check_peak_rss();

}  // namespace peat::fuzz
