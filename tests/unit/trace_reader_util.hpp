// Reader-side helpers shared by the trace unit tests (Catch2): open, load and
// describe tensors through the C API, and rewrite a file's format minor.
#pragma once

#include <catch2/catch.hpp>

#include <peat/peat.h>

#include "trace/codec.hpp"
#include "trace/format.hpp"
#include "trace_test_util.hpp"

#include <string>
#include <vector>

namespace peat_test {

inline peat_trace_reader_t* open_ok(const std::string& path) {
  peat_trace_reader_t* r = nullptr;
  const peat_status_t st = peat_trace_open(path.c_str(), nullptr, &r);
  INFO(peat_last_error_message());
  REQUIRE(st == PEAT_STATUS_OK);
  return r;
}

inline std::vector<std::byte> load(peat_trace_reader_t* r, uint64_t i, peat_trace_slot_t slot, uint64_t t,
                            peat_status_t* status = nullptr, std::string* msg = nullptr) {
  peat_trace_tensor_info_t ti{};
  ti.struct_size = sizeof ti;
  REQUIRE(peat_trace_tensor_info(r, i, slot, t, &ti) == PEAT_STATUS_OK);
  std::vector<std::byte> out(ti.raw_bytes);
  const peat_status_t st = peat_trace_load_tensor(r, i, slot, t, out.data(), out.size());
  if (status) *status = st;
  if (msg) *msg = peat_last_error_message();
  if (!status) {
    INFO(peat_last_error_message());
    REQUIRE(st == PEAT_STATUS_OK);
  }
  return out;
}

inline peat_trace_tensor_info_t tinfo(peat_trace_reader_t* r, uint64_t i, peat_trace_slot_t slot, uint64_t t) {
  peat_trace_tensor_info_t ti{};
  ti.struct_size = sizeof ti;
  REQUIRE(peat_trace_tensor_info(r, i, slot, t, &ti) == PEAT_STATUS_OK);
  return ti;
}

// Rewrites the header's format minor (and its checksum): a file as a writer
// of that minor wrote it, when its records use nothing newer.
inline void set_minor(const std::string& path, uint16_t minor) {
  auto bytes = peat_test::read_file(path);
  peat::impl::trace::put_u16(bytes.data() + 10, minor);
  const uint32_t meta_len = peat::impl::trace::get_u32(bytes.data() + 16);
  std::vector<unsigned char> covered(bytes.begin(), bytes.begin() + 24);
  covered.insert(covered.end(), bytes.begin() + peat::impl::trace::kHeaderFixed, bytes.begin() + peat::impl::trace::kHeaderFixed + meta_len);
  peat::impl::trace::put_u64(bytes.data() + 24, peat::impl::trace::checksum(covered.data(), covered.size()));
  peat_test::write_file(path, bytes);
}

struct Session {
  peat_session_t* s = nullptr;
  Session() { REQUIRE(peat_session_create(nullptr, &s) == PEAT_STATUS_OK); }
  ~Session() { peat_session_destroy(s); }
};

inline DLTensor view(void* data, int ndim, int64_t* shape, int64_t* strides = nullptr) {
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = ndim;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape;
  t.strides = strides;
  return t;
}

}  // namespace peat_test
