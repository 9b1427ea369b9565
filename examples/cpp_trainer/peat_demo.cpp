// peat_demo — the end-to-end demo (`make demo`).
//
//  1. Trains the golden model with PEAT attached, recording a trace: sampled
//     GEMM calls (operands and attributes), per-step losses, the checkpoint.
//  2. Plays every candidate GEMM of libpeat_candidates.so back against the
//     trace (peat/playback.h) and names its error model with the detector
//     (peat/detector.h) on one recorded GEMM with a trailing partial tile,
//     with the spatial map and a second candidate run.
//  3. Runtime FI: trains again with two candidates swapped in on every, every
//     10th and every 100th GEMM call, and compares the loss curves with the
//     golden one inside the noise band of a second golden run (another batch
//     order), through peat_compare_loss.
//  4. Prints one table (candidate -> verdict -> training impact) and writes
//     <out>/report.json.
#include "peat_trainer/peat_dispatcher.hpp"

#include <CLI/CLI.hpp>
#include <peat/peat.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

using namespace peat_trainer;
namespace fs = std::filesystem;

namespace {

void check(peat_status_t s, const char* what) {
  if (s != PEAT_STATUS_OK) throw std::runtime_error(std::string(what) + ": " + peat_last_error_message());
}

struct Config {
  std::string model = "cnn";
  int epochs = 2, batch = 64;
  int64_t train_size = 3000, test_size = 1000;
  float lr = 2e-3f;
  uint64_t seed = 1, order_seed2 = 7;
  uint64_t record_every = 50;
  int window = 20;
};

struct RunResult {
  std::vector<double> loss;
  double test_loss = 0, test_acc = 0, seconds = 0;
  int64_t candidate_calls = 0;
  uint64_t recorded = 0;
};

RunResult train_run(const Config& cfg, const Dataset& train, const Dataset& test, PeatOptions popt, uint64_t order_seed) {
  auto model = cfg.model == "cnn" ? make_cnn(16, 1, 16, 32, 64, kShapeClasses, cfg.seed)
                                  : make_mlp(16, 1, 128, kShapeClasses, cfg.seed);
  popt.seed = cfg.seed;
  PeatDispatcher pd(popt);
  pd.attach(*model);
  Trainer trainer(*model, pd);
  RunResult r;
  trainer.on_step = [&](const StepScalars& s) { r.loss.push_back(s.loss); };
  pd.hook(trainer);
  TrainConfig tc;
  tc.epochs = cfg.epochs;
  tc.batch = cfg.batch;
  tc.lr = cfg.lr;
  tc.seed = order_seed;
  const auto t0 = std::chrono::steady_clock::now();
  const auto epochs = trainer.fit(train, test, tc);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  pd.checkpoint("pretrain", trainer.step(), model->state());
  pd.close();
  r.test_loss = epochs.back().test.loss;
  r.test_acc = epochs.back().test.accuracy;
  r.candidate_calls = pd.candidate_calls();
  r.recorded = pd.recorded();
  return r;
}

double smoothed_final(const std::vector<double>& v, int window) {
  const size_t n = std::min<size_t>(v.size(), static_cast<size_t>(window));
  double s = 0;
  for (size_t i = v.size() - n; i < v.size(); ++i) s += v[i];
  return n ? s / static_cast<double>(n) : NAN;
}

std::vector<double> smooth(const std::vector<double>& v, int window) {
  std::vector<double> out(v.size());
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    s += v[i];
    if (i >= static_cast<size_t>(window)) s -= v[i - window];
    out[i] = s / static_cast<double>(std::min<size_t>(i + 1, window));
  }
  return out;
}

struct Detection {
  std::string op;
  int64_t M = 0, N = 0, K = 0;
  uint64_t mismatches = 0, elements = 0;
  peat_detection_t det{};
  std::string top;  // "MODEL (key parameter)"
  std::string json;
};

std::string key_parameter(const peat_verdict_t& v) {
  char buf[160];
  switch (v.model) {
    case PEAT_ERROR_MODEL_REDUCED_PRECISION:
    case PEAT_ERROR_MODEL_ROUNDING:
      std::snprintf(buf, sizeof buf, "%.1f eff. mantissa bits%s%s", v.effective_mantissa_bits,
                    v.nearest_format >= 0 ? ", ~" : "", v.nearest_format >= 0 ? peat_float_format_name(v.nearest_format) : "");
      return buf;
    case PEAT_ERROR_MODEL_STUCK_AT:
    case PEAT_ERROR_MODEL_BITFLIP_SINGLE:
      std::snprintf(buf, sizeof buf, "bit %d = %d, lane %d/%d", v.bit, v.polarity, v.lane, v.lane_period);
      return buf;
    case PEAT_ERROR_MODEL_REGION:
    case PEAT_ERROR_MODEL_DROPPED_WRITES:
      std::snprintf(buf, sizeof buf, "%lld rows x %lld cols, %lld tiles", static_cast<long long>(v.rows_affected),
                    static_cast<long long>(v.cols_affected), static_cast<long long>(v.tiles_affected));
      return buf;
    case PEAT_ERROR_MODEL_SCALING:
      std::snprintf(buf, sizeof buf, "alpha %.4g", v.alpha);
      return buf;
    default:
      return "";
  }
}

// Runs the candidate on one recorded GEMM twice; detector with map and rerun.
Detection detect_on_record(const peat_trace_reader_t* reader, uint64_t rec, peat_kernel_fn fn) {
  Detection d;
  peat_trace_record_info_t info{};
  info.struct_size = sizeof info;
  check(peat_trace_record_info(reader, rec, &info), "peat_trace_record_info");
  d.op = info.name;
  DLManagedTensor* t[3] = {nullptr, nullptr, nullptr};
  check(peat_trace_load_tensor_alloc(reader, rec, PEAT_TRACE_SLOT_INPUT, 0, &t[0]), "load A");
  check(peat_trace_load_tensor_alloc(reader, rec, PEAT_TRACE_SLOT_INPUT, 1, &t[1]), "load B");
  check(peat_trace_load_tensor_alloc(reader, rec, PEAT_TRACE_SLOT_OUTPUT, 0, &t[2]), "load C");
  const DLTensor& C = t[2]->dl_tensor;
  d.M = C.shape[0];
  d.N = C.shape[1];
  d.K = t[0]->dl_tensor.shape[1];
  std::vector<float> c1(static_cast<size_t>(d.M * d.N), 0.0f), c2(c1.size(), 0.0f);
  DLTensor ins[2] = {t[0]->dl_tensor, t[1]->dl_tensor};
  DLTensor o1 = C, o2 = C;
  o1.data = c1.data();
  o2.data = c2.data();
  o1.byte_offset = o2.byte_offset = 0;
  if (fn(nullptr, ins, 2, &o1, 1, nullptr) != 0) throw std::runtime_error("candidate failed on record " + std::to_string(rec));
  peat_signature_config_t cfg;
  peat_signature_config_init(&cfg);
  cfg.reduction_length = d.K;
  cfg.spatial_rows = d.M;
  cfg.spatial_cols = d.N;
  peat_signature_t sig, sig2;
  peat_signature_init(&sig);
  peat_signature_init(&sig2);
  peat_spatial_map_t map;
  peat_spatial_map_init(&map);
  check(peat_analyze(&C, &o1, &cfg, &sig, &map), "peat_analyze");
  // A second run on the same input; a racy kernel may need a few tries to show it.
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::fill(c2.begin(), c2.end(), 0.0f);
    if (fn(nullptr, ins, 2, &o2, 1, nullptr) != 0) throw std::runtime_error("candidate failed (rerun)");
    if (std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(float)) != 0) break;
  }
  check(peat_analyze(&C, &o2, &cfg, &sig2, nullptr), "peat_analyze (rerun)");
  peat_detect_context_t ctx;
  peat_detect_context_init(&ctx);
  ctx.op_kind = PEAT_OP_KIND_GEMM;
  ctx.reduction_length = d.K;
  ctx.map = &map;
  ctx.rerun = &sig2;
  peat_detection_init(&d.det);
  const peat_status_t st = peat_detect(&sig, &ctx, &d.det);
  peat_spatial_map_release(&map);
  for (auto* m : t) peat_trace_tensor_free(m);
  check(st, "peat_detect");
  d.elements = d.det.elements;
  d.mismatches = d.det.mismatches;
  const peat_verdict_t& v = d.det.verdicts[0];
  d.top = peat_error_model_name(v.model);
  const std::string k = key_parameter(v);
  if (!k.empty()) d.top += " (" + k + ")";
  size_t len = 0;
  peat_detection_render(&d.det, PEAT_RENDER_JSON, nullptr, 0, &len);
  d.json.assign(len + 1, '\0');
  check(peat_detection_render(&d.det, PEAT_RENDER_JSON, d.json.data(), d.json.size(), &len), "peat_detection_render");
  d.json.resize(len);
  return d;
}

// Rank of a model when several ops give different verdicts: lower = more specific.
int specificity(peat_error_model_t m) {
  static const peat_error_model_t order[] = {
      PEAT_ERROR_MODEL_NONDETERMINISM, PEAT_ERROR_MODEL_STUCK_AT,      PEAT_ERROR_MODEL_BITFLIP_SINGLE, PEAT_ERROR_MODEL_BITFLIP_MULTI,
      PEAT_ERROR_MODEL_REGION,         PEAT_ERROR_MODEL_DROPPED_WRITES, PEAT_ERROR_MODEL_SCALING,       PEAT_ERROR_MODEL_NONFINITE,
      PEAT_ERROR_MODEL_GARBAGE,        PEAT_ERROR_MODEL_REDUCED_PRECISION, PEAT_ERROR_MODEL_ROUNDING,   PEAT_ERROR_MODEL_UNKNOWN,
      PEAT_ERROR_MODEL_EXACT};
  for (int i = 0; i < static_cast<int>(sizeof order / sizeof order[0]); ++i)
    if (order[i] == m) return i;
  return 99;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') { o += "\\n"; continue; }
    o += c;
  }
  return o;
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"peat_demo: golden trace, playback + detector for every candidate, runtime FI vs the golden noise band"};
  Config cfg;
  std::string out = "demo-out", lib;
  std::vector<std::string> fi_names = {"peat_cand_bf16", "peat_cand_stuck_bit27"};
  std::vector<uint64_t> fi_every = {1, 10, 100};
  std::vector<std::string> candidates = {"peat_cand_blocked", "peat_cand_pairwise", "peat_cand_bf16", "peat_cand_tf32",
                                         "peat_cand_fp16acc", "peat_cand_splitk_racy", "peat_cand_tile_drop",
                                         "peat_cand_no_alpha", "peat_cand_stuck_bit27"};
  app.add_option("--out", out, "output folder (trace, playback JSON lines, report.json)");
  app.add_option("--candidates-lib", lib, "path of libpeat_candidates.so (default: next to this program's build folder)");
  app.add_option("--model", cfg.model, "cnn or mlp")->check(CLI::IsMember({"cnn", "mlp"}));
  app.add_option("--epochs", cfg.epochs, "training epochs")->check(CLI::PositiveNumber);
  app.add_option("--train-size", cfg.train_size, "training images")->check(CLI::PositiveNumber);
  app.add_option("--test-size", cfg.test_size, "test images")->check(CLI::PositiveNumber);
  app.add_option("--record-every", cfg.record_every, "record every N-th call of each GEMM op")->check(CLI::PositiveNumber);
  app.add_option("--candidates", candidates, "candidates to play back (symbols of the library)");
  app.add_option("--fi-candidates", fi_names, "candidates for runtime FI");
  app.add_option("--fi-every", fi_every, "runtime FI frequencies (every N-th call)");
  app.add_option("--order-seed", cfg.order_seed2, "batch-order seed of the second golden run (noise band)");
  CLI11_PARSE(app, argc, argv);

  try {
    const auto t_start = std::chrono::steady_clock::now();
    if (lib.empty()) lib = (fs::canonical("/proc/self/exe").parent_path().parent_path() / "candidates" / "libpeat_candidates.so").string();
    void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) throw std::runtime_error("cannot open " + lib + ": " + dlerror());
    fs::create_directories(out);
    const std::string trace = (fs::path(out) / "golden.peat").string();

    DataOptions dopt;
    const Dataset train = make_shapes_dataset(cfg.train_size, cfg.seed, dopt);
    const Dataset test = make_shapes_dataset(cfg.test_size, cfg.seed + 1000003, dopt);

    // 1. Golden run, recorded; a second golden run with another batch order.
    PeatOptions rec;
    rec.trace = trace;
    rec.record_every = cfg.record_every;
    const RunResult golden = train_run(cfg, train, test, rec, cfg.seed);
    std::printf("[1] golden: %zu steps, final loss %.4f, test acc %.3f, %.1f s, %llu GEMM calls recorded -> %s\n", golden.loss.size(),
                smoothed_final(golden.loss, cfg.window), golden.test_acc, golden.seconds,
                static_cast<unsigned long long>(golden.recorded), trace.c_str());
    const RunResult golden2 = train_run(cfg, train, test, PeatOptions{}, cfg.order_seed2);
    const std::vector<double> sg = smooth(golden.loss, cfg.window), sg2 = smooth(golden2.loss, cfg.window);
    double band = 0;
    for (size_t i = 0; i < std::min(sg.size(), sg2.size()); ++i) band = std::max(band, std::fabs(sg2[i] - sg[i]));
    std::printf("[1] golden, order seed %llu: final loss %.4f, test acc %.3f; noise band (max |smoothed loss difference|, window %d): %.4f\n",
                static_cast<unsigned long long>(cfg.order_seed2), smoothed_final(golden2.loss, cfg.window), golden2.test_acc, cfg.window, band);

    // 2. Playback of every candidate, detector on one GEMM with a trailing partial tile.
    peat_trace_reader_t* reader = nullptr;
    check(peat_trace_open(trace.c_str(), nullptr, &reader), "peat_trace_open");
    // The first record of every op: the detector runs on each, and a candidate's
    // verdict is the most specific one found (a defect may show on some shapes
    // or value ranges only: a stuck exponent bit is invisible where it is 1 anyway).
    std::vector<uint64_t> probes;
    {
      peat_trace_filter_t f;
      peat_trace_filter_init(&f);
      f.kinds = 1u << PEAT_TRACE_KIND_OP;
      std::vector<std::string> seen;
      for (uint64_t i = 0; peat_trace_next(reader, &f, i, &i) == PEAT_STATUS_OK; ++i) {
        peat_trace_record_info_t ri{};
        ri.struct_size = sizeof ri;
        check(peat_trace_record_info(reader, i, &ri), "peat_trace_record_info");
        if (std::find(seen.begin(), seen.end(), ri.name) != seen.end()) continue;
        seen.emplace_back(ri.name);
        probes.push_back(i);
      }
    }
    if (probes.empty()) throw std::runtime_error("the trace holds no GEMM record");

    struct Row {
      std::string name;
      peat_playback_summary_t pb{};
      Detection det;
      std::vector<std::pair<uint64_t, peat_loss_comparison_t>> fi;
      std::vector<RunResult> fi_runs;
    };
    std::vector<Row> rows;
    const std::string jsonl = (fs::path(out) / "playback.jsonl").string();
    bool first = true;
    for (const std::string& name : candidates) {
      Row row;
      row.name = name;
      const std::string sym = name + "_kernel";
      auto fn = reinterpret_cast<peat_kernel_fn>(dlsym(handle, sym.c_str()));
      if (!fn) throw std::runtime_error("no symbol " + sym + " in " + lib);
      peat_playback_options_t po;
      peat_playback_options_init(&po);
      po.run_twice = 1;
      peat_playback_t* pb = nullptr;
      check(peat_playback_create(reader, &po, &pb), "peat_playback_create");
      check(peat_playback_set_candidate(pb, fn, nullptr), "peat_playback_set_candidate");
      const peat_status_t st = peat_playback_run(pb);
      row.pb.struct_size = sizeof row.pb;
      if (st == PEAT_STATUS_OK) {
        peat_playback_summary(pb, &row.pb);
        peat_playback_write_jsonl(pb, jsonl.c_str(), first ? 0 : 1);
        first = false;
      }
      peat_playback_destroy(pb);
      check(st, "peat_playback_run");
      for (uint64_t probe : probes) {
        Detection d = detect_on_record(reader, probe, fn);
        if (row.det.op.empty() || specificity(d.det.verdicts[0].model) < specificity(row.det.det.verdicts[0].model)) row.det = std::move(d);
      }
      std::printf("[2] %-22s playback: %llu records, %llu exact, %llu mismatched, %llu nondeterministic; detector on %s [%lldx%lldx%lld]: %s\n",
                  name.c_str(), static_cast<unsigned long long>(row.pb.done), static_cast<unsigned long long>(row.pb.exact),
                  static_cast<unsigned long long>(row.pb.mismatched), static_cast<unsigned long long>(row.pb.nondeterministic),
                  row.det.op.c_str(), static_cast<long long>(row.det.M), static_cast<long long>(row.det.N),
                  static_cast<long long>(row.det.K), row.det.top.c_str());
      std::fflush(stdout);
      rows.push_back(std::move(row));
    }
    peat_trace_close(reader);

    // 3. Runtime FI with the chosen candidates at the chosen frequencies.
    peat_loss_compare_options_t lco;
    peat_loss_compare_options_init(&lco);
    lco.window = cfg.window;
    lco.band_abs = band;
    lco.band_rel = 0;
    for (const std::string& name : fi_names) {
      auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.name == name; });
      if (it == rows.end()) {
        rows.push_back(Row{});
        rows.back().name = name;
        it = rows.end() - 1;
      }
      for (uint64_t every : fi_every) {
        PeatOptions fo;
        fo.fi_candidate = lib + ":" + name + "_kernel";
        fo.fi_every = every;
        const RunResult r = train_run(cfg, train, test, fo, cfg.seed);
        peat_loss_comparison_t cmp{};
        cmp.struct_size = sizeof cmp;
        check(peat_compare_loss(golden.loss.data(), r.loss.data(), nullptr, std::min(golden.loss.size(), r.loss.size()), &lco, &cmp),
              "peat_compare_loss");
        std::printf("[3] %-22s every %-4llu: %lld candidate calls, final loss %.4f (golden %.4f), test acc %.3f, %s\n", name.c_str(),
                    static_cast<unsigned long long>(every), static_cast<long long>(r.candidate_calls),
                    smoothed_final(r.loss, cfg.window), smoothed_final(golden.loss, cfg.window), r.test_acc,
                    cmp.beyond_count == 0 ? "inside the noise band" : "OUTSIDE the noise band");
        std::fflush(stdout);
        it->fi.emplace_back(every, cmp);
        it->fi_runs.push_back(r);
      }
    }

    // 4. The table and report.json.
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    std::printf("\n%-22s | %-56s | %s\n", "candidate", "detector verdict (key parameter)", "training impact (runtime FI, final loss vs golden)");
    std::printf("%s\n", std::string(150, '-').c_str());
    for (const Row& r : rows) {
      std::string impact;
      if (r.fi.empty()) impact = "(not trained)";
      for (size_t i = 0; i < r.fi.size(); ++i) {
        char b[128];
        const double fl = smoothed_final(r.fi_runs[i].loss, cfg.window);
        std::snprintf(b, sizeof b, "%s1/%llu: %+.3f %s", i ? "; " : "", static_cast<unsigned long long>(r.fi[i].first),
                      fl - smoothed_final(golden.loss, cfg.window), r.fi[i].second.beyond_count == 0 ? "in band" : "OUT");
        impact += b;
      }
      std::printf("%-22s | %-56s | %s\n", r.name.c_str(), r.det.top.c_str(), impact.c_str());
    }
    const std::string report = (fs::path(out) / "report.json").string();
    std::FILE* f = std::fopen(report.c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + report);
    std::fprintf(f, "{\n  \"schema_version\": 1,\n  \"trace\": \"%s\",\n  \"model\": \"%s\",\n  \"steps\": %zu,\n", json_escape(trace).c_str(),
                 cfg.model.c_str(), golden.loss.size());
    std::fprintf(f, "  \"golden\": {\"final_loss\": %s, \"test_accuracy\": %s, \"seconds\": %s, \"recorded_calls\": %llu},\n",
                 num(smoothed_final(golden.loss, cfg.window)).c_str(), num(golden.test_acc).c_str(), num(golden.seconds).c_str(),
                 static_cast<unsigned long long>(golden.recorded));
    std::fprintf(f, "  \"golden_other_order\": {\"order_seed\": %llu, \"final_loss\": %s, \"test_accuracy\": %s},\n",
                 static_cast<unsigned long long>(cfg.order_seed2), num(smoothed_final(golden2.loss, cfg.window)).c_str(),
                 num(golden2.test_acc).c_str());
    std::fprintf(f, "  \"noise_band\": %s,\n  \"loss_window\": %d,\n  \"candidates\": [\n", num(band).c_str(), cfg.window);
    for (size_t j = 0; j < rows.size(); ++j) {
      const Row& r = rows[j];
      std::fprintf(f, "    {\"name\": \"%s\", \"verdict\": \"%s\",\n", r.name.c_str(), json_escape(r.det.top).c_str());
      std::fprintf(f, "     \"playback\": {\"records\": %llu, \"exact\": %llu, \"mismatched\": %llu, \"nondeterministic\": %llu, \"failed\": %llu},\n",
                   static_cast<unsigned long long>(r.pb.done), static_cast<unsigned long long>(r.pb.exact),
                   static_cast<unsigned long long>(r.pb.mismatched), static_cast<unsigned long long>(r.pb.nondeterministic),
                   static_cast<unsigned long long>(r.pb.failed));
      std::fprintf(f, "     \"detector_op\": \"%s\", \"detection\": %s,\n     \"runtime_fi\": [", r.det.op.c_str(),
                   r.det.json.empty() ? "null" : r.det.json.c_str());
      for (size_t i = 0; i < r.fi.size(); ++i) {
        const auto& c = r.fi[i].second;
        std::fprintf(f, "%s\n       {\"every\": %llu, \"candidate_calls\": %lld, \"final_loss\": %s, \"final_delta\": %s, \"test_accuracy\": %s, "
                        "\"beyond_band_steps\": %lld, \"first_beyond_step\": %lld, \"inside_band\": %s}",
                     i ? "," : "", static_cast<unsigned long long>(r.fi[i].first), static_cast<long long>(r.fi_runs[i].candidate_calls),
                     num(smoothed_final(r.fi_runs[i].loss, cfg.window)).c_str(),
                     num(smoothed_final(r.fi_runs[i].loss, cfg.window) - smoothed_final(golden.loss, cfg.window)).c_str(),
                     num(r.fi_runs[i].test_acc).c_str(), static_cast<long long>(c.beyond_count),
                     static_cast<long long>(c.first_beyond_step), c.beyond_count == 0 ? "true" : "false");
      }
      std::fprintf(f, "%s]}%s\n", r.fi.empty() ? "" : "\n     ", j + 1 < rows.size() ? "," : "");
    }
    std::fprintf(f, "  ],\n  \"wall_seconds\": %s\n}\n", num(wall).c_str());
    std::fclose(f);
    std::printf("\noutputs: %s (trace), %s (playback per record and op), %s; %.1f s\n", trace.c_str(), jsonl.c_str(), report.c_str(), wall);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "peat_demo: %s\n", e.what());
    return 1;
  }
  return 0;
}
