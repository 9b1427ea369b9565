// Playback's verdicts: the Detector on each call's output (with its own op
// context and spatial map), and the per-op tallies of those verdicts.
#include "lib/playback/work.hpp"

#include "lib/playback/record_context.hpp"
#include "lib/analyzer/analyze.hpp"
#include "lib/analyzer/defaults.hpp"
#include "lib/core/error.hpp"
#include "lib/core/tensor_view.hpp"
#include "lib/detector/defaults.hpp"
#include "lib/detector/detector.hpp"

#include <memory>

namespace peat::impl::playback {

// The Detector on one call's output, with the record's own context (op kind
// and K from its op name, shapes and attributes) and, with run_twice, the
// second run as the rerun. Throws what peat_detect throws.
peat_detection_t Playback::detect_call(const Result& r, std::size_t output, const peat_spatial_map_t* map) const {
  if (output < r.detections.size() && r.detections[output] != nullptr && map == nullptr) return *r.detections[output];
  const auto& sigs = r.signatures[output];
  const peat_signature_t& sig = sigs[PEAT_PLAYBACK_FIRST_VS_GOLDEN];
  peat_detect_context_t ctx = detector::default_context();
  const auto oc = record_op_context(reader_, r.record, output, sig.reduction_length);
  ctx.op_kind = oc.kind;
  ctx.reduction_length = oc.reduction_length;
  ctx.map = map;
  if (options_.run_twice) {
    ctx.rerun = &sigs[PEAT_PLAYBACK_SECOND_VS_GOLDEN];
    ctx.rerun_diff = &sigs[PEAT_PLAYBACK_SECOND_VS_FIRST];  // the two runs compared elementwise
  }
  peat_detection_t out = detector::empty_detection();
  detector::detect(sig, ctx, out);
  return out;
}

// Per-call verdicts: each call judged alone, so that a fault that hits every
// call differently (one flipped bit per call, in another element each time)
// is named per call, where the merged signature of the calls would look like
// a stuck bit or many flips.
//
// A mismatching output is judged with a spatial map (REGION and lanes need
// one), built in a second pass over that output only: over the natural 2-D
// view (rows x last extent), counting the pairs that fail the tolerance, or
// every bitwise mismatch where the tolerance fails none (tiny values, such as
// gradients, that any atol swallows).
void Playback::judge_calls(Work& work) const {
  Result& r = work.result;
  r.verdicts.assign(r.signatures.size(), Result::CallVerdict{});
  r.detections.assign(r.signatures.size(), nullptr);
  for (std::size_t i = 0; i < r.signatures.size(); ++i) {
    const peat_signature_t& sig = r.signatures[i][PEAT_PLAYBACK_FIRST_VS_GOLDEN];
    if (sig.count == 0) continue;
    peat_spatial_map_t map = analyzer::empty_map();
    try {
      const peat_spatial_map_t* used = nullptr;
      if (sig.bitwise_mismatch_count > 0) {
        peat_signature_config_t cfg = config_;
        cfg.map_mismatch = sig.tolerance_fail_count > 0 ? PEAT_MISMATCH_TOLERANCE : PEAT_MISMATCH_BITWISE;
        DLTensor g = work.golden[i].view(), c1 = work.runs[0][i].view();
        peat_signature_t again;
        analyzer::analyze(make_view(&g, "golden"), make_view(&c1, "candidate"), cfg, again, &map);
        used = &map;
      }
      const peat_detection_t d = detect_call(r, i, used);
      if (d.verdict_count > 0) r.verdicts[i] = {d.verdicts[0].model, d.verdicts[0].bit};
      if (used != nullptr) r.detections[i] = std::make_shared<const peat_detection_t>(d);
    } catch (const Error&) {
      // not judged (counted in the tally's records only)
    }
    analyzer::release_map(map);
  }
}

peat_playback_verdicts_t Playback::group_verdicts(peat_playback_group_kind_t kind, uint64_t index,
                                                 uint64_t output) const {
  const Group& g = group(kind, index);
  if (output >= g.n_outputs)
    fail(PEAT_STATUS_NOT_FOUND, "output {} of group '{}' does not exist (it has {})", output, g.name, g.n_outputs);
  peat_playback_verdicts_t out{};
  out.struct_size = sizeof out;
  out.top_model = -1;
  if (output >= g.tallies.size()) return out;
  const VerdictTally& t = g.tallies[output];
  out.records = t.records;
  out.bits = t.bits;
  uint64_t judged = 0;
  for (std::size_t m = 0; m < t.counts.size(); ++m) {
    out.counts[m] = t.counts[m];
    judged += t.counts[m];
  }
  out.judged = judged;
  // The anomaly leads: the most frequent model other than the floors (EXACT,
  // ROUNDING, REDUCED_PRECISION); the most frequent floor when there is none.
  const auto most = [&](bool floors) {
    int32_t best = -1;
    for (std::size_t m = 0; m < t.counts.size(); ++m) {
      const bool floor = m == PEAT_ERROR_MODEL_EXACT || m == PEAT_ERROR_MODEL_ROUNDING ||
                         m == PEAT_ERROR_MODEL_REDUCED_PRECISION;
      if (floor != floors || t.counts[m] == 0) continue;
      if (best < 0 || t.counts[m] > t.counts[static_cast<std::size_t>(best)]) best = static_cast<int32_t>(m);
    }
    return best;
  };
  out.top_model = most(false);
  if (out.top_model < 0) out.top_model = most(true);
  return out;
}

peat_detection_t Playback::result_detection(uint64_t index, uint64_t output) const {
  if (index >= results_.size())
    fail(PEAT_STATUS_NOT_FOUND, "result {} does not exist (the last run has {})", index, results_.size());
  const Result& r = results_[index];
  if (r.status != PEAT_STATUS_OK)
    fail(PEAT_STATUS_NOT_FOUND, "result {} (record {}) was not compared: {}", index, r.record, r.message);
  if (output >= r.signatures.size())
    fail(PEAT_STATUS_NOT_FOUND, "output {} of result {} does not exist (it has {})", output, index, r.signatures.size());
  return detect_call(r, output);
}

}  // namespace peat::impl::playback
