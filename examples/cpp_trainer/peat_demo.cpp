// peat_demo — the end-to-end demo (`make demo`).
//
//  1. Trains the golden model with PEAT attached, recording a trace: sampled
//     GEMM calls (operands and attributes), per-step losses, the checkpoints.
//     Every run is two stages: pretraining, a checkpoint saved to a file, a
//     fresh model restored from it with a new head, finetuning on a shifted
//     label set. Three more golden runs with other batch orders give the
//     run-to-run noise band of each stage (the library's peat_noise_band_t).
//  2. Plays every candidate GEMM of libpeat_candidates.so back against the
//     trace (peat/playback.h) and names its error model with the detector
//     (peat/detector.h) on the first recorded call of every op, with the
//     spatial map and a second candidate run.
//  3. Runtime FI: trains again with two candidates swapped in on every, every
//     10th and every 100th GEMM call, and compares each stage's loss curve with
//     the golden one against the noise band (peat_noise_band_judge: inside or
//     outside, effect in band units) and the final parameters with the golden
//     ones per tensor (peat_compare_checkpoints; drift over the golden runs').
//  4. Prints two tables (candidate -> verdict -> training impact; the runs with
//     their per-stage loss deltas and checkpoint drift) and writes
//     <out>/report.json (keys: docs/demo-report.md).
#include "demo/demo_runs.hpp"
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
using namespace peat_demo;
namespace fs = std::filesystem;

namespace {

void check(peat_status_t s, const char* what) {
  if (s != PEAT_STATUS_OK) throw std::runtime_error(std::string(what) + ": " + peat_last_error_message());
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

// Whether verdict `a` (of one op) should replace `b` (of another) as the
// candidate's verdict: confident verdicts (>= 0.8) before weak ones, then the
// more specific model, then the higher confidence. A weak specific verdict (a
// REGION at 0.76 from the columns a ReLU zeroed in a small weight-gradient GEMM)
// must not outrank a confident REDUCED_PRECISION of another op.
bool preferred(const peat_verdict_t& a, const peat_verdict_t& b) {
  const bool ca = a.confidence >= 0.8, cb = b.confidence >= 0.8;
  if (ca != cb) return ca;
  if (specificity(a.model) != specificity(b.model)) return specificity(a.model) < specificity(b.model);
  return a.confidence > b.confidence;
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


// A loss series as {"steps": [...], "loss": [...]}; steps are the global step
// indices (finetuning continues the pretraining's count).
std::string series_json(const std::vector<double>& loss, int64_t first_step) {
  std::string s = "{\"steps\": [";
  for (size_t i = 0; i < loss.size(); ++i) s += (i ? ", " : "") + std::to_string(first_step + static_cast<int64_t>(i));
  s += "], \"loss\": [";
  for (size_t i = 0; i < loss.size(); ++i) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", loss[i]);
    s += (i ? ", " : "") + (std::isfinite(loss[i]) ? std::string(b) : std::string("null"));
  }
  return s + "]}";
}

// The tensor with the largest relative L2 drift ("" when none).
const TensorDrift* worst_drift(const std::vector<TensorDrift>& drift) {
  const TensorDrift* w = nullptr;
  for (const TensorDrift& d : drift)
    if (!w || !(d.relative_l2 <= w->relative_l2)) w = &d;  // NaN counts as the worst
  return w;
}

std::string drift_json(const std::vector<TensorDrift>& drift) {
  std::string s = "[";
  for (size_t i = 0; i < drift.size(); ++i) {
    const TensorDrift& d = drift[i];
    s += std::string(i ? ",\n      " : "\n      ") + "{\"tensor\": \"" + json_escape(d.tensor) + "\", \"count\": " + std::to_string(d.count) +
         ", \"rmse\": " + num(d.rmse) + ", \"relative_l2\": " + num(d.relative_l2) + ", \"max_abs_error\": " + num(d.max_abs_error) + "}";
  }
  return s + (drift.empty() ? "]" : "\n    ]");
}

// One training run compared with the golden one.
struct ComparedRun {
  std::string label;  // "golden order 7", "peat_cand_bf16 1/10"
  std::string candidate;
  uint64_t every = 0;
  uint64_t order_seed = 0;
  RunResult run;
  peat_impact_t pre{}, ft{};  // per stage, against its noise band
  std::vector<TensorDrift> drift;
  bool inside() const { return pre.verdict == PEAT_IMPACT_INSIDE_NOISE && ft.verdict == PEAT_IMPACT_INSIDE_NOISE; }
};

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
  uint64_t order_seed = 0;
  app.add_option("--out", out, "output folder (trace, checkpoint, playback JSON lines, report.json)");
  app.add_option("--candidates-lib", lib, "path of libpeat_candidates.so (default: next to this program's build folder)");
  app.add_option("--model", cfg.model, "cnn or mlp")->check(CLI::IsMember({"cnn", "mlp"}));
  app.add_option("--epochs", cfg.epochs, "pretraining epochs")->check(CLI::PositiveNumber);
  app.add_option("--finetune-epochs", cfg.finetune_epochs, "finetuning epochs (0: no finetuning)")->check(CLI::NonNegativeNumber);
  app.add_option("--train-size", cfg.train_size, "pretraining images")->check(CLI::PositiveNumber);
  app.add_option("--finetune-size", cfg.finetune_size, "finetuning images")->check(CLI::PositiveNumber);
  app.add_option("--test-size", cfg.test_size, "test images")->check(CLI::PositiveNumber);
  app.add_option("--shift", cfg.shift, "finetuning labels are (label + shift) mod 10");
  app.add_option("--record-every", cfg.record_every, "record every N-th call of each GEMM op")->check(CLI::PositiveNumber);
  app.add_option("--candidates", candidates, "candidates to play back (symbols of the library)");
  app.add_option("--fi-candidates", fi_names, "candidates for runtime FI");
  app.add_option("--fi-every", fi_every, "runtime FI frequencies (every N-th call)");
  app.add_option("--band-seeds", cfg.band_order_seeds, "batch-order seeds of the extra golden runs that give the noise band")
      ->check(CLI::PositiveNumber);
  app.add_option("--order-seed", order_seed, "batch-order seed of the first extra golden run (replaces the first --band-seeds value)");
  app.add_option("--band-widen", cfg.band_widen,
                 "the noise band is this times the largest golden run-to-run deviation (0: 1 + 1.5 / k for k runs)")
      ->check(CLI::Number);
  app.add_option("--window", cfg.window, "moving-average window (steps) of the loss comparison")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (order_seed != 0) cfg.band_order_seeds.front() = order_seed;
  if (cfg.band_order_seeds.empty()) cfg.band_order_seeds = {7};

  try {
    const auto t_start = std::chrono::steady_clock::now();
    if (lib.empty()) lib = (fs::canonical("/proc/self/exe").parent_path().parent_path() / "candidates" / "libpeat_candidates.so").string();
    void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) throw std::runtime_error("cannot open " + lib + ": " + dlerror());
    fs::create_directories(out);
    const std::string trace = (fs::path(out) / "golden.peat").string();
    const std::string golden_ckpt = (fs::path(out) / "pretrain.ckpt").string();
    const std::string scratch_ckpt = (fs::path(out) / "scratch.ckpt").string();
    const Data data = Data::make(cfg);
    const int W = cfg.window;

    // 1. Golden run, recorded; more golden runs with other batch orders give the noise band.
    PeatOptions rec;
    rec.trace = trace;
    rec.record_every = cfg.record_every;
    const RunResult golden = train_run(cfg, data, rec, cfg.seed, golden_ckpt);
    const int64_t ft_first = static_cast<int64_t>(golden.pretrain.loss.size());
    std::printf("[1] golden: pretrain %zu steps, final loss %.4f, test acc %.3f -> checkpoint %s; finetune (labels +%d, new head: acc %.3f "
                "before) %zu steps, final loss %.4f, test acc %.3f; %.1f s, %llu GEMM calls recorded -> %s\n",
                golden.pretrain.loss.size(), smoothed_final(golden.pretrain.loss, W), golden.pretrain.test_acc, golden_ckpt.c_str(),
                cfg.shift, golden.finetune_acc_before, golden.finetune.loss.size(), smoothed_final(golden.finetune.loss, W),
                golden.finetune.test_acc, golden.seconds, static_cast<unsigned long long>(golden.recorded), trace.c_str());
    std::fflush(stdout);
    // The band of each stage (peat_noise_band_t): the largest deviation of any
    // other-order golden run from the golden one (moving average over W steps,
    // from the first full window on), times band_widen or 1 + 1.5 / k.
    StageBand pre_band(golden.pretrain.loss, W, cfg.band_widen, 0), ft_band(golden.finetune.loss, W, cfg.band_widen, ft_first);
    std::vector<ComparedRun> others;
    for (uint64_t s : cfg.band_order_seeds) {
      ComparedRun o;
      o.label = "golden order " + std::to_string(s);
      o.order_seed = s;
      o.run = train_run(cfg, data, PeatOptions{}, s, scratch_ckpt);
      o.drift = checkpoint_drift(golden.final_state, o.run.final_state);
      pre_band.add_rerun(o.run.pretrain.loss, total_relative_l2(o.drift));
      ft_band.add_rerun(o.run.finetune.loss, total_relative_l2(o.drift));
      others.push_back(std::move(o));
    }
    const peat_noise_band_info_t pre_info = pre_band.info(), ft_info = ft_band.info();
    const double band_pre = pre_info.band, band_ft = golden.finetune.loss.empty() ? 0.0 : ft_info.band;
    std::printf("[1] noise band (rule: %.3g x the largest golden run-to-run deviation of k=%u runs with other batch orders, "
                "%d-step moving average, from the first full window): pretrain %.4f, finetune %.4f; golden-vs-golden parameter drift %.3g\n",
                pre_info.factor, pre_info.reruns, W, band_pre, band_ft, pre_info.max_param_drift);
    for (ComparedRun& o : others) {
      o.pre = pre_band.judge(o.run.pretrain.loss, total_relative_l2(o.drift));
      o.ft = ft_band.judge(o.run.finetune.loss, total_relative_l2(o.drift));
      std::printf("[1] %s: final loss %.4f / %.4f (pretrain / finetune), test acc %.3f / %.3f; max |smoothed loss - golden| %.4f / %.4f\n",
                  o.label.c_str(), smoothed_final(o.run.pretrain.loss, W), smoothed_final(o.run.finetune.loss, W), o.run.pretrain.test_acc,
                  o.run.finetune.test_acc, o.pre.max_deviation, o.ft.max_deviation);
    }

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
      std::vector<size_t> fi;  // indices into `fi_runs`
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
        if (row.det.op.empty() || preferred(d.det.verdicts[0], row.det.det.verdicts[0])) row.det = std::move(d);
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

    // 3. Runtime FI with the chosen candidates at the chosen frequencies, both stages.
    std::vector<ComparedRun> fi_runs;
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
        ComparedRun c;
        c.label = name + " 1/" + std::to_string(every);
        c.candidate = name;
        c.every = every;
        c.order_seed = cfg.seed;
        c.run = train_run(cfg, data, fo, cfg.seed, scratch_ckpt);
        c.drift = checkpoint_drift(golden.final_state, c.run.final_state);
        c.pre = pre_band.judge(c.run.pretrain.loss, total_relative_l2(c.drift));
        c.ft = ft_band.judge(c.run.finetune.loss, total_relative_l2(c.drift));
        std::printf("[3] %-22s every %-4llu: %lld candidate calls; final loss %.4f / %.4f (golden %.4f / %.4f), test acc %.3f / %.3f, %s "
                    "(%.3g / %.3g band units; parameter drift %.3g x golden-vs-golden)\n",
                    name.c_str(), static_cast<unsigned long long>(every), static_cast<long long>(c.run.candidate_calls),
                    smoothed_final(c.run.pretrain.loss, W), smoothed_final(c.run.finetune.loss, W), smoothed_final(golden.pretrain.loss, W),
                    smoothed_final(golden.finetune.loss, W), c.run.pretrain.test_acc, c.run.finetune.test_acc,
                    c.inside() ? "INSIDE_NOISE" : "OUTSIDE_NOISE", c.pre.effect, c.ft.effect, c.pre.param_drift_ratio);
        std::fflush(stdout);
        it->fi.push_back(fi_runs.size());
        fi_runs.push_back(std::move(c));
      }
    }
    std::error_code ec;
    fs::remove(scratch_ckpt, ec);

    // 4. The tables and report.json.
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    const double g_pre = smoothed_final(golden.pretrain.loss, W), g_ft = smoothed_final(golden.finetune.loss, W);
    const bool has_ft = !golden.finetune.loss.empty();
    std::printf("\n%-22s | %-56s | %s\n", "candidate", "detector verdict (key parameter)",
                has_ft ? "training impact (runtime FI: final loss - golden, pretrain / finetune)" : "training impact (runtime FI: final loss - golden)");
    std::printf("%s\n", std::string(150, '-').c_str());
    for (const Row& r : rows) {
      std::string impact;
      if (r.fi.empty()) impact = "(not trained)";
      for (size_t i = 0; i < r.fi.size(); ++i) {
        const ComparedRun& c = fi_runs[r.fi[i]];
        char b[160];
        if (has_ft)
          std::snprintf(b, sizeof b, "%s1/%llu: %+.3f / %+.3f %s", i ? "; " : "", static_cast<unsigned long long>(c.every),
                        smoothed_final(c.run.pretrain.loss, W) - g_pre, smoothed_final(c.run.finetune.loss, W) - g_ft,
                        c.inside() ? "in band" : "OUT");
        else
          std::snprintf(b, sizeof b, "%s1/%llu: %+.3f %s", i ? "; " : "", static_cast<unsigned long long>(c.every),
                        smoothed_final(c.run.pretrain.loss, W) - g_pre, c.inside() ? "in band" : "OUT");
        impact += b;
      }
      std::printf("%-22s | %-56s | %s\n", r.name.c_str(), r.det.top.c_str(), impact.c_str());
    }
    // The second table: every compared run, per stage, and how far its final parameters drifted.
    std::printf("\n%-28s | %10s | %-21s | %-21s | %-13s | %s\n", "run (vs golden)", "cand. calls", "pretrain loss delta", "finetune loss delta",
                "test acc", "checkpoint drift: rel. L2 of all params; worst tensor");
    std::printf("%s\n", std::string(150, '-').c_str());
    std::printf("%-28s | %10s | band +-%-14.4f | band +-%-14.4f | %.3f / %.3f | -\n", "golden (recorded)", "-", band_pre, band_ft,
                golden.pretrain.test_acc, golden.finetune.test_acc);
    auto run_line = [&](const ComparedRun& c) {
      char pre[64], ft[64], drift[96];
      std::snprintf(pre, sizeof pre, "%+.4f %s", smoothed_final(c.run.pretrain.loss, W) - g_pre,
                    c.pre.verdict == PEAT_IMPACT_INSIDE_NOISE ? "in" : "OUT");
      if (has_ft)
        std::snprintf(ft, sizeof ft, "%+.4f %s", smoothed_final(c.run.finetune.loss, W) - g_ft,
                      c.ft.verdict == PEAT_IMPACT_INSIDE_NOISE ? "in" : "OUT");
      else std::snprintf(ft, sizeof ft, "-");
      const TensorDrift* w = worst_drift(c.drift);
      if (w) std::snprintf(drift, sizeof drift, "%.2e; worst %s %.2e", total_relative_l2(c.drift), w->tensor.c_str(), w->relative_l2);
      else std::snprintf(drift, sizeof drift, "-");
      std::printf("%-28s | %10lld | %-21s | %-21s | %.3f / %.3f | %s\n", c.label.c_str(), static_cast<long long>(c.run.candidate_calls), pre, ft,
                  c.run.pretrain.test_acc, c.run.finetune.test_acc, drift);
    };
    for (const ComparedRun& c : others) run_line(c);
    for (const ComparedRun& c : fi_runs) run_line(c);

    const std::string report = (fs::path(out) / "report.json").string();
    std::FILE* f = std::fopen(report.c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + report);
    std::fprintf(f, "{\n  \"schema_version\": 1,\n  \"trace\": \"%s\",\n  \"model\": \"%s\",\n  \"steps\": %zu,\n", json_escape(trace).c_str(),
                 cfg.model.c_str(), golden.pretrain.loss.size());
    std::fprintf(f, "  \"golden\": {\"final_loss\": %s, \"test_accuracy\": %s, \"seconds\": %s, \"recorded_calls\": %llu},\n",
                 num(g_pre).c_str(), num(golden.pretrain.test_acc).c_str(), num(golden.seconds).c_str(),
                 static_cast<unsigned long long>(golden.recorded));
    const ComparedRun& o1 = others.front();
    std::fprintf(f, "  \"golden_other_order\": {\"order_seed\": %llu, \"final_loss\": %s, \"test_accuracy\": %s},\n",
                 static_cast<unsigned long long>(o1.order_seed), num(smoothed_final(o1.run.pretrain.loss, W)).c_str(),
                 num(o1.run.pretrain.test_acc).c_str());
    std::fprintf(f, "  \"noise_band\": %s,\n  \"loss_window\": %d,\n  \"candidates\": [\n", num(band_pre).c_str(), W);
    auto stage_json = [&](const ComparedRun& c, const StageResult& s, const peat_impact_t& cmp, double g) {
      char b[640];
      std::snprintf(b, sizeof b,
                    "\"final_loss\": %s, \"final_delta\": %s, \"test_accuracy\": %s, \"beyond_band_steps\": %lld, \"first_beyond_step\": %lld, "
                    "\"inside_band\": %s, \"impact\": \"%s\", \"effect\": %s, \"param_drift_ratio\": %s",
                    num(smoothed_final(s.loss, W)).c_str(), num(smoothed_final(s.loss, W) - g).c_str(), num(s.test_acc).c_str(),
                    static_cast<long long>(cmp.beyond_count), static_cast<long long>(cmp.first_beyond_step),
                    cmp.verdict == PEAT_IMPACT_INSIDE_NOISE ? "true" : "false",
                    cmp.verdict == PEAT_IMPACT_INSIDE_NOISE ? "INSIDE_NOISE" : "OUTSIDE_NOISE", num(cmp.effect).c_str(),
                    num(cmp.param_drift_ratio).c_str());
      (void)c;
      return std::string(b);
    };
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
        const ComparedRun& c = fi_runs[r.fi[i]];
        // The pretraining stage's fields at the top (as before the finetune stage existed), the finetuning's under "finetune".
        std::fprintf(f, "%s\n       {\"every\": %llu, \"label\": \"%s\", \"candidate_calls\": %lld, \"checkpoint_relative_l2\": %s, %s,\n        \"finetune\": {%s}}",
                     i ? "," : "", static_cast<unsigned long long>(c.every), json_escape(c.label).c_str(),
                     static_cast<long long>(c.run.candidate_calls), num(total_relative_l2(c.drift)).c_str(),
                     stage_json(c, c.run.pretrain, c.pre, g_pre).c_str(), stage_json(c, c.run.finetune, c.ft, g_ft).c_str());
      }
      std::fprintf(f, "%s]}%s\n", r.fi.empty() ? "" : "\n     ", j + 1 < rows.size() ? "," : "");
    }
    std::fprintf(f, "  ],\n");
    // Additions of the two-stage demo (docs/demo-report.md).
    std::fprintf(f, "  \"checkpoint\": \"%s\",\n", json_escape(golden_ckpt).c_str());
    std::fprintf(f, "  \"noise_band_rule\": \"%s\",\n",
                 json_escape("per stage (peat_noise_band_t): " + num(pre_info.factor) +
                             " (band_widen, or 1 + 1.5 / k) x the largest max_t |moving average (" + std::to_string(W) +
                             " steps) of the loss of a golden run with another batch order - that of the golden run| over k = " +
                             std::to_string(others.size()) + " such runs, t from the first full window on; runs are compared from there too")
                     .c_str());
    std::fprintf(f, "  \"noise_band_reruns\": %u,\n  \"noise_band_factor\": %s,\n", pre_info.reruns, num(pre_info.factor).c_str());
    std::fprintf(f, "  \"golden_other_orders\": [");
    for (size_t i = 0; i < others.size(); ++i) {
      const ComparedRun& o = others[i];
      std::fprintf(f, "%s\n    {\"label\": \"%s\", \"order_seed\": %llu, \"max_deviation\": %s, \"finetune_max_deviation\": %s, "
                      "\"checkpoint_relative_l2\": %s,\n     \"pretrain\": {%s},\n     \"finetune\": {%s}}",
                   i ? "," : "", json_escape(o.label).c_str(), static_cast<unsigned long long>(o.order_seed),
                   num(o.pre.max_deviation).c_str(), num(o.ft.max_deviation).c_str(), num(total_relative_l2(o.drift)).c_str(),
                   stage_json(o, o.run.pretrain, o.pre, g_pre).c_str(), stage_json(o, o.run.finetune, o.ft, g_ft).c_str());
    }
    std::fprintf(f, "\n  ],\n  \"loss_series\": {\n    \"golden\": %s", series_json(golden.pretrain.loss, 0).c_str());
    for (const auto* runs : {&others, &fi_runs})
      for (const ComparedRun& c : *runs)
        std::fprintf(f, ",\n    \"%s\": %s", json_escape(c.label).c_str(), series_json(c.run.pretrain.loss, 0).c_str());
    std::fprintf(f, "\n  },\n");
    std::fprintf(f, "  \"finetune\": {\"steps\": %zu, \"first_step\": %lld, \"label_shift\": %d, \"noise_band\": %s,\n", golden.finetune.loss.size(),
                 static_cast<long long>(ft_first), cfg.shift, num(band_ft).c_str());
    std::fprintf(f, "    \"golden\": {\"final_loss\": %s, \"test_accuracy\": %s, \"test_accuracy_before\": %s},\n", num(g_ft).c_str(),
                 num(golden.finetune.test_acc).c_str(), num(golden.finetune_acc_before).c_str());
    std::fprintf(f, "    \"loss_series\": {\n      \"golden\": %s", series_json(golden.finetune.loss, ft_first).c_str());
    for (const auto* runs : {&others, &fi_runs})
      for (const ComparedRun& c : *runs)
        std::fprintf(f, ",\n      \"%s\": %s", json_escape(c.label).c_str(), series_json(c.run.finetune.loss, ft_first).c_str());
    std::fprintf(f, "\n    }},\n  \"checkpoint_drift\": {");
    bool first_drift = true;
    for (const auto* runs : {&others, &fi_runs})
      for (const ComparedRun& c : *runs) {
        std::fprintf(f, "%s\n    \"%s\": %s", first_drift ? "" : ",", json_escape(c.label).c_str(), drift_json(c.drift).c_str());
        first_drift = false;
      }
    std::fprintf(f, "\n  },\n  \"wall_seconds\": %s\n}\n", num(wall).c_str());
    std::fclose(f);
    std::printf("\noutputs in %s: %s (trace), %s (pretrained checkpoint), %s (playback per record and op), %s; %.1f s\n",
                fs::absolute(out).c_str(), trace.c_str(), golden_ckpt.c_str(), jsonl.c_str(), report.c_str(), wall);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "peat_demo: %s\n", e.what());
    return 1;
  }
  return 0;
}
