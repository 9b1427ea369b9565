// Fault test: playback candidates that throw, hang, write outside their
// outputs or crash. With options.isolate = 1 each such record fails with a
// status and a message and playback goes on with the next record; the good
// records before and after them compare exactly. The throwing candidate is
// also run in-process (isolate = 0), where the exception must not cross the C
// boundary either. Usage: fault_playback WORKDIR
#include <peat/peat.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

constexpr int64_t kN = 1000;  // elements per tensor (4000 bytes: not a page multiple)

// The ops of the trace, in record order, and what the candidate does for each.
const char* const kOps[] = {"good_first", "throws", "hangs", "oob_near", "oob_far", "crash", "good_last"};

extern "C" int32_t candidate(void*, const DLTensor* in, int32_t n_in, DLTensor* out, int32_t n_out,
                             const void* attrs) {
  if (n_in != 1 || n_out != 1 || attrs == nullptr) return 9;
  const std::string op = static_cast<const peat_playback_attrs_t*>(attrs)->op;
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < kN; ++i) y[i] = 2 * x[i];
  if (op == "throws") throw std::runtime_error("candidate bug");
  if (op == "hangs") std::this_thread::sleep_for(std::chrono::hours(1));
  if (op == "oob_near") y[kN] = 1.0f;                   // one element past the end
  if (op == "oob_far") y[kN + 64] = 1.0f;  // 256 bytes past the end: in the guard page
  if (op == "crash") *static_cast<volatile int*>(nullptr) = 1;
  return 0;
}

void write_trace(const std::string& path) {
  peat_session_t* session = nullptr;
  peat_session_create(nullptr, &session);
  peat_profiler_options_t po;
  peat_profiler_options_init(&po);
  po.path = path.c_str();
  peat_profiler_t* prof = nullptr;
  if (peat_profiler_create(session, &po, &prof) != PEAT_STATUS_OK) {
    std::printf("FAIL profiler: %s\n", peat_last_error_message());
    ++failures;
    return;
  }
  std::vector<float> x(kN), y(kN);
  for (int64_t i = 0; i < kN; ++i) x[i] = 0.25f * static_cast<float>(i % 97) - 3.0f, y[i] = 2 * x[i];
  int64_t shape[1] = {kN};
  DLTensor tx{x.data(), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
  DLTensor ty{y.data(), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
  const DLTensor* ins[1] = {&tx};
  const DLTensor* outs[1] = {&ty};
  for (const char* name : kOps) {
    uint32_t op = 0;
    peat_session_intern_op(session, name, &op);
    peat_op_record_t r;
    peat_op_record_init(&r);
    r.op = op;
    r.force = 1;
    r.inputs = ins;
    r.n_inputs = 1;
    r.outputs = outs;
    r.n_outputs = 1;
    int32_t recorded = 0;
    if (peat_profiler_record_op(prof, &r, &recorded, nullptr) != PEAT_STATUS_OK || recorded != 1) ++failures;
  }
  expect(peat_profiler_close(prof) == PEAT_STATUS_OK, "trace of 7 op records written");
  peat_profiler_destroy(prof);
  peat_session_destroy(session);
}

void check_result(const peat_playback_t* pb, uint64_t i, peat_status_t want, const char* words) {
  peat_playback_result_t r{};
  r.struct_size = sizeof r;
  if (peat_playback_result(pb, i, &r) != PEAT_STATUS_OK) {
    expect(false, std::string("result ") + std::to_string(i) + ": " + peat_last_error_message());
    return;
  }
  const std::string msg = r.message ? r.message : "";
  bool ok = r.status == want && (words == nullptr || msg.find(words) != std::string::npos);
  if (want != PEAT_STATUS_OK) ok = ok && msg.find(r.op) != std::string::npos;  // names the record's op
  if (want == PEAT_STATUS_OK) ok = ok && r.bitwise_mismatches == 0 && r.elements == kN;
  expect(ok, std::string("record ") + std::to_string(i) + " (" + r.op + "): " + peat_status_string(r.status) +
                 (msg.empty() ? "" : " — " + msg));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::filesystem::path work = argv[1];
  std::filesystem::create_directories(work);
  const std::string path = (work / "faults.peat").string();
  write_trace(path);
  peat_trace_reader_t* reader = nullptr;
  if (peat_trace_open(path.c_str(), nullptr, &reader) != PEAT_STATUS_OK) {
    std::printf("FAIL open: %s\n", peat_last_error_message());
    return 1;
  }
  for (int32_t pipelined = 0; pipelined <= 1; ++pipelined) {
    std::printf("-- isolate = 1, %s\n", pipelined ? "pipelined (thread_safe = 1)" : "serial");
    peat_playback_options_t o;
    peat_playback_options_init(&o);
    o.attrs_mode = PEAT_PLAYBACK_ATTRS_LIST;
    o.isolate = 1;
    o.timeout_ms = 1500;
    o.thread_safe = pipelined;
    peat_playback_t* pb = nullptr;
    expect(peat_playback_create(reader, &o, &pb) == PEAT_STATUS_OK, "create");
    peat_playback_set_candidate(pb, candidate, nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    expect(peat_playback_run(pb) == PEAT_STATUS_OK, "run returns OK with failing records in it");
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    expect(secs < 10, "run took " + std::to_string(secs) + " s (the hang is cut at 1.5 s)");
    check_result(pb, 0, PEAT_STATUS_OK, nullptr);
    check_result(pb, 1, PEAT_STATUS_CALLBACK_FAILED, "threw an exception");
    check_result(pb, 2, PEAT_STATUS_TIMEOUT, "did not return within 1500 ms");
    check_result(pb, 3, PEAT_STATUS_CALLBACK_FAILED, "wrote outside output 0 (4000 bytes)");
    check_result(pb, 4, PEAT_STATUS_CALLBACK_FAILED, "worker process");  // guard page: SIGSEGV (or ASan's exit)
    check_result(pb, 5, PEAT_STATUS_CALLBACK_FAILED, "worker process");
    check_result(pb, 6, PEAT_STATUS_OK, nullptr);
    peat_playback_summary_t s{};
    s.struct_size = sizeof s;
    peat_playback_summary(pb, &s);
    expect(s.selected == 7 && s.done == 7 && s.ok == 2 && s.failed == 5 && s.exact == 2,
           "summary: 7 done, 2 ok and exact, 5 failed");
    peat_playback_destroy(pb);
  }
  {
    // In-process: only the records that do not hang or crash (the exception
    // must be caught at the C boundary).
    std::printf("-- isolate = 0 (in-process), exception only\n");
    peat_trace_filter_t f;
    peat_trace_filter_init(&f);
    f.op_glob = "[gt]*";  // good_first, throws, good_last
    peat_playback_options_t o;
    peat_playback_options_init(&o);
    o.attrs_mode = PEAT_PLAYBACK_ATTRS_LIST;
    o.filter = &f;
    peat_playback_t* pb = nullptr;
    peat_playback_create(reader, &o, &pb);
    peat_playback_set_candidate(pb, candidate, nullptr);
    expect(peat_playback_run(pb) == PEAT_STATUS_OK, "in-process run returns OK");
    check_result(pb, 0, PEAT_STATUS_OK, nullptr);
    check_result(pb, 1, PEAT_STATUS_CALLBACK_FAILED, "threw an exception");
    check_result(pb, 2, PEAT_STATUS_OK, nullptr);
    peat_playback_destroy(pb);
  }
  {
    peat_playback_options_t o;
    peat_playback_options_init(&o);
    o.isolate = 2;
    peat_playback_t* pb = nullptr;
    const peat_status_t st = peat_playback_create(reader, &o, &pb);
    expect(st == PEAT_STATUS_INVALID_ARGUMENT && std::strstr(peat_last_error_message(), "options.isolate"),
           std::string("isolate = 2 refused: ") + peat_last_error_message());
  }
  peat_trace_close(reader);
  std::filesystem::remove_all(work);
  std::printf("%s\n", failures ? "FAILED" : "every candidate fault became a record status; playback went on");
  return failures ? 1 : 0;
}
