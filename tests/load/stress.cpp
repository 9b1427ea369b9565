// Load test: 16 threads record op invocations through one profiler and
// dispatch ops through one injector (shadow runs of a candidate, injected bit
// flips, plain golden runs) on one session, for a given number of seconds,
// while one of them marks steps and records scalars. Run under TSan (preset
// tsan) it must finish with no report; in every build it checks that the
// counts add up: every record a call reported as recorded is in the trace and
// verifies, and the injector fired as often as the dispatch calls say.
// Usage: peat_stress SECONDS WORKDIR [THREADS]
#include <peat/peat.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int64_t kN = 256;

extern "C" int32_t golden(void*, const DLTensor* in, int32_t, DLTensor* out, int32_t, const void*) {
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < kN; ++i) y[i] = std::tanh(x[i]);
  return 0;
}

// A candidate with a small, deterministic error: tanh through float rounding of a cubic.
extern "C" int32_t candidate(void*, const DLTensor* in, int32_t, DLTensor* out, int32_t, const void*) {
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < kN; ++i) y[i] = std::tanh(x[i]) * (1.0f + 1e-6f);
  return 0;
}

int failures = 0;
void expect(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SECONDS WORKDIR [THREADS]\n", argv[0]);
    return 2;
  }
  const double seconds = std::atof(argv[1]);
  const std::filesystem::path work = argv[2];
  const int threads = argc > 3 ? std::atoi(argv[3]) : 16;
  std::filesystem::create_directories(work);
  const std::string path = (work / "stress.peat").string();

  peat_session_t* session = nullptr;
  peat_session_create(nullptr, &session);
  peat_profiler_options_t po;
  peat_profiler_options_init(&po);
  po.path = path.c_str();
  po.queue_bytes = 8u << 20;
  po.full_queue_policy = PEAT_QUEUE_DROP;  // the training threads must never wait on the disk
  peat_profiler_t* prof = nullptr;
  if (peat_profiler_create(session, &po, &prof) != PEAT_STATUS_OK) {
    std::printf("FAIL profiler: %s\n", peat_last_error_message());
    return 1;
  }
  peat_sample_rule_t rule;  // keep the trace small: every 4th call of each op
  peat_sample_rule_init(&rule);
  rule.op_glob = "*";
  rule.every_n = 4;
  peat_profiler_add_rule(prof, &rule);

  peat_injector_t* inj = nullptr;
  peat_injector_create(session, nullptr, &inj);
  peat_injector_set_candidate(inj, "gemm*", candidate, nullptr);
  peat_injector_policy_t shadow;
  peat_injector_policy_init(&shadow);
  shadow.op_pattern = "gemm*";
  shadow.action = PEAT_ACTION_RUN_BOTH;
  shadow.every_n = 3;
  peat_injector_add_policy(inj, &shadow, nullptr);
  peat_inject_spec_t flip;
  peat_inject_spec_init(&flip, PEAT_INJECT_BITFLIP);
  peat_injector_policy_t inject;
  peat_injector_policy_init(&inject);
  inject.op_pattern = "act*";
  inject.action = PEAT_ACTION_INJECT;
  inject.every_n = 5;
  inject.spec = &flip;
  peat_injector_add_policy(inj, &inject, nullptr);

  const char* names[] = {"gemm0", "gemm1", "act0", "act1", "norm0", "norm1", "gemm2", "act2"};
  uint32_t ops[8];
  for (int i = 0; i < 8; ++i) peat_session_intern_op(session, names[i], &ops[i]);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> dispatched{0}, fired{0}, recorded{0}, errors{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::vector<float> x(kN), y(kN);
      int64_t shape[1] = {kN};
      DLTensor tx{x.data(), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
      DLTensor ty{y.data(), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0};
      const DLTensor* ins[1] = {&tx};
      const DLTensor* outs[1] = {&ty};
      uint64_t k = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        const uint32_t op = ops[(t + k) % 8];
        for (int64_t i = 0; i < kN; ++i) x[i] = 0.01f * static_cast<float>((i * 7 + k + t) % 300) - 1.5f;
        peat_action_t action = PEAT_ACTION_INVALID;
        uint64_t call = 0;
        if (peat_injector_dispatch(inj, op, &tx, 1, &ty, 1, nullptr, golden, nullptr, &action, &call) !=
            PEAT_STATUS_OK)
          ++errors;
        ++dispatched;
        if (action != PEAT_ACTION_RUN_GOLDEN) ++fired;
        peat_op_record_t r;
        peat_op_record_init(&r);
        r.op = op;
        r.call_index = call;
        r.inputs = ins;
        r.n_inputs = 1;
        r.outputs = outs;
        r.n_outputs = 1;
        int32_t rec = 0;
        if (peat_profiler_record_op(prof, &r, &rec, nullptr) != PEAT_STATUS_OK) ++errors;
        recorded += rec;
        if (t == 0 && k % 64 == 0) {
          peat_profiler_mark_step(prof, static_cast<int64_t>(k / 64));
          peat_profiler_record_scalar(prof, "loss", -1, 1.0 / (1.0 + static_cast<double>(k)));
        }
        if (t == 1 && k % 128 == 0) {
          uint64_t count = 0, dropped = 0;
          peat_injector_firing_count(inj, &count, &dropped);
          peat_profiler_stats_t s{};
          s.struct_size = sizeof s;
          peat_profiler_stats(prof, &s);
        }
        ++k;
      }
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& th : pool) th.join();

  expect(peat_profiler_close(prof) == PEAT_STATUS_OK, "profiler closes cleanly");
  peat_profiler_stats_t s{};
  s.struct_size = sizeof s;
  peat_profiler_stats(prof, &s);
  uint64_t logged = 0, log_dropped = 0;
  peat_injector_firing_count(inj, &logged, &log_dropped);
  std::printf("   %d threads, %.0f s: %llu dispatches (%llu fired), %llu op records recorded, %llu records written, "
              "%llu dropped (queue full), %llu firings logged + %llu not kept\n",
              threads, seconds, (unsigned long long)dispatched.load(), (unsigned long long)fired.load(),
              (unsigned long long)recorded.load(), (unsigned long long)s.records_written,
              (unsigned long long)s.dropped_queue_full, (unsigned long long)logged, (unsigned long long)log_dropped);
  expect(errors == 0, "no call returned an error");
  expect(dispatched > 0 && fired > 0, "ops were dispatched and policies fired");
  expect(logged + log_dropped == fired, "firings logged + not kept == dispatches that fired");
  expect(s.dropped_error == 0 && s.error == PEAT_STATUS_OK, "no write error");
  peat_injector_destroy(inj);
  peat_profiler_destroy(prof);
  peat_session_destroy(session);

  peat_trace_reader_t* reader = nullptr;
  uint64_t count = 0, tensors = 0, op_records = 0;
  if (peat_trace_open(path.c_str(), nullptr, &reader) == PEAT_STATUS_OK) {
    peat_trace_record_count(reader, &count);
    peat_trace_filter_t f;
    peat_trace_filter_init(&f);
    f.kinds = 1u << PEAT_TRACE_KIND_OP;
    for (uint64_t i = 0; peat_trace_next(reader, &f, i, &i) == PEAT_STATUS_OK; ++i) ++op_records;
    expect(peat_trace_verify(reader, &tensors) == PEAT_STATUS_OK, "every tensor in the trace verifies");
    peat_trace_close(reader);
  } else {
    expect(false, std::string("trace opens: ") + peat_last_error_message());
  }
  expect(op_records == recorded.load(), "op records in the file == calls reported as recorded (" +
                                            std::to_string(op_records) + ")");
  expect(count == s.records_written, "records in the file == records written");
  std::filesystem::remove_all(work);
  std::printf("%s\n", failures ? "FAILED" : "stress run consistent");
  return failures ? 1 : 0;
}
