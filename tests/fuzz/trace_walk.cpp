#include "trace_walk.hpp"

#include <peat/peat.h>

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace peat::fuzz {

bool memory_file(const void* data, std::size_t size, int& fd, char (&path)[64]) {
  fd = memfd_create("peat-fuzz", 0);
  if (fd < 0) return false;
  const auto* p = static_cast<const char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t w = write(fd, p + done, size - done);
    if (w <= 0) {
      close(fd);
      return false;
    }
    done += static_cast<std::size_t>(w);
  }
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  return true;
}

namespace {

// A status must come with a message: the library's rule for bad input.
void expect_message(peat_status_t status) {
  if (status != PEAT_STATUS_OK && peat_last_error_message()[0] == '\0') {
    std::fprintf(stderr, "status %s without a message\n", peat_status_string(status));
    std::abort();
  }
}

void walk_tensors(const peat_trace_reader_t* reader, uint64_t index, peat_trace_slot_t slot) {
  uint64_t count = 0;
  const peat_status_t st = peat_trace_tensor_count(reader, index, slot, &count);
  expect_message(st);
  if (st != PEAT_STATUS_OK) return;
  for (uint64_t t = 0; t < count && t < 64; ++t) {
    peat_trace_tensor_info_t info{};
    info.struct_size = sizeof info;
    expect_message(peat_trace_tensor_info(reader, index, slot, t, &info));
    DLManagedTensor* tensor = nullptr;
    const peat_status_t ls = peat_trace_load_tensor_alloc(reader, index, slot, t, &tensor);
    expect_message(ls);
    if (ls == PEAT_STATUS_OK) {
      // Touch the decoded bytes so ASan sees any short allocation.
      const DLTensor& dl = tensor->dl_tensor;
      int64_t numel = 1;
      for (int d = 0; d < dl.ndim; ++d) numel *= dl.shape[d];
      const std::size_t bytes = static_cast<std::size_t>(numel) * ((dl.dtype.bits * dl.dtype.lanes + 7u) / 8u);
      volatile uint8_t sink = 0;
      const auto* b = static_cast<const uint8_t*>(dl.data) + dl.byte_offset;
      for (std::size_t i = 0; i < bytes; i += 61) sink = static_cast<uint8_t>(sink ^ b[i]);
      if (bytes > 0) sink = static_cast<uint8_t>(sink ^ b[bytes - 1]);
      peat_trace_tensor_free(tensor);
    }
    // The caller-buffer path with a deliberately short buffer.
    uint8_t small[16];
    expect_message(peat_trace_load_tensor(reader, index, slot, t, small, sizeof small));
  }
}

void walk(const peat_trace_reader_t* reader) {
  peat_trace_run_info_t run{};
  run.struct_size = sizeof run;
  if (peat_trace_run_info(reader, &run) == PEAT_STATUS_OK)
    for (uint64_t i = 0; i < run.n_tags && i < 64; ++i) {
      const char* key = nullptr;
      const char* value = nullptr;
      expect_message(peat_trace_tag(reader, i, &key, &value));
    }
  uint64_t count = 0;
  expect_message(peat_trace_record_count(reader, &count));
  for (uint64_t i = 0; i < count && i < 256; ++i) {
    peat_trace_record_info_t info{};
    info.struct_size = sizeof info;
    if (peat_trace_record_info(reader, i, &info) != PEAT_STATUS_OK) continue;
    for (uint64_t a = 0; a < info.n_attrs && a < 64; ++a) {
      peat_attr_t attr{};
      if (peat_trace_attr(reader, i, a, &attr) == PEAT_STATUS_OK && attr.type == PEAT_ATTR_INT_ARRAY && attr.n_ints)
        (void)attr.ints[attr.n_ints - 1];
    }
    walk_tensors(reader, i, PEAT_TRACE_SLOT_INPUT);
    walk_tensors(reader, i, PEAT_TRACE_SLOT_OUTPUT);
    walk_tensors(reader, i, PEAT_TRACE_SLOT_CHECKPOINT);
  }
  peat_trace_filter_t filter;
  peat_trace_filter_init(&filter);
  filter.op_glob = "*m[a-z]?";
  uint64_t next = 0;
  for (int k = 0; k < 64 && peat_trace_next(reader, &filter, next, &next) == PEAT_STATUS_OK; ++k) ++next;
  uint64_t tensors = 0;
  expect_message(peat_trace_verify(reader, &tensors));
}

}  // namespace

void walk_trace_file(const char* path) {
  peat_trace_reader_options_t options;
  peat_trace_reader_options_init(&options);
  options.max_tensor_bytes = 64u << 20;  // keep single inputs fast; larger -> a status
  options.max_meta_bytes = 1u << 20;
  options.max_record_bytes = kWalkRecordCap;
  peat_trace_reader_t* reader = nullptr;
  peat_status_t st = peat_trace_open(path, &options, &reader);
  expect_message(st);
  if (st == PEAT_STATUS_OK) {
    walk(reader);
    peat_trace_close(reader);
  }
  peat_trace_recovery_t recovery{};
  recovery.struct_size = sizeof recovery;
  reader = nullptr;
  st = peat_trace_recover(path, &options, &reader, &recovery);
  expect_message(st);
  if (st == PEAT_STATUS_OK) {
    walk(reader);
    peat_trace_close(reader);
  }
  check_peak_rss();
}

void check_peak_rss() {
  // Bounded memory on any input: the peak resident size of the whole run (every
  // input so far) stays within a fixed multiple of the per-record cap, however
  // large the sizes a tiny input declares (docs/reliability.md, "Limits").
  struct rusage ru {};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return;
  const uint64_t peak = static_cast<uint64_t>(ru.ru_maxrss) * 1024;
  if (peak > kPeakRssBound) {
    std::fprintf(stderr, "peak RSS %llu bytes is above the bound of %llu bytes (16 x the per-record cap)\n",
                 static_cast<unsigned long long>(peak), static_cast<unsigned long long>(kPeakRssBound));
    std::abort();
  }
}

}  // namespace peat::fuzz
