#include "tools/peat/compare_ranks.hpp"

#include "tools/peat/rank_set.hpp"
#include "tools/peat/verdicts.hpp"

#include <fnmatch.h>

#include <vector>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <tuple>

namespace peat::cli {

namespace {

// What must agree across ranks: a collective's output or a checkpoint's tensor.
struct Item {
  int64_t step = 0;
  std::string kind;  // "collective" or "checkpoint"
  std::string name, layer, tensor;
  uint64_t call = 0;
  bool operator<(const Item& o) const {
    return std::tie(step, kind, name, layer, call, tensor) < std::tie(o.step, o.kind, o.name, o.layer, o.call, o.tensor);
  }
};

struct Where {
  uint64_t record = 0, slot = 0, index = 0, checksum = 0;
};

// Every item of one trace, in record order.
std::vector<std::pair<Item, Where>> items_of(const RankTrace& t, const std::string& glob) {
  std::vector<std::pair<Item, Where>> out;
  const uint64_t n = checked(t.path, [&] { return t.reader.record_count(); });
  for (uint64_t i = 0; i < n; ++i) {
    const peat_trace_record_info_t info = record_info(t.reader, i);
    peat_trace_slot_t slot;
    Item item;
    item.step = info.step;
    item.name = info.name;
    if (info.kind == PEAT_TRACE_KIND_OP && fnmatch(glob.c_str(), info.name, 0) == 0) {
      slot = PEAT_TRACE_SLOT_OUTPUT;
      item.kind = "collective";
      item.layer = info.module_path;
      item.call = info.call_index;
    } else if (info.kind == PEAT_TRACE_KIND_CHECKPOINT) {
      slot = PEAT_TRACE_SLOT_CHECKPOINT;
      item.kind = "checkpoint";
    } else {
      continue;
    }
    const uint64_t tensors = checked(t.path, [&] { return t.reader.tensor_count(i, slot); });
    for (uint64_t k = 0; k < tensors; ++k) {
      const peat_trace_tensor_info_t ti = checked(t.path, [&] { return t.reader.tensor_info(i, slot, k); });
      Item it = item;
      it.tensor = ti.name[0] != '\0' ? ti.name : std::to_string(k);
      out.push_back({it, Where{i, static_cast<uint64_t>(slot), k, ti.checksum}});
    }
  }
  return out;
}

// Tensor `where` of a rank's trace.
peat::owned_tensor load(const RankTrace& t, const Where& where) {
  return checked(t.path, [&] {
    return t.reader.load_tensor(where.record, static_cast<peat_trace_slot_t>(where.slot), where.index);
  });
}

peat_signature_t difference(const RankTrace& ref, const Where& a, const RankTrace& other, const Where& b) {
  const peat::owned_tensor x = load(ref, a), y = load(other, b);
  return checked(other.path, [&] { return peat::analyze(&x->dl_tensor, &y->dl_tensor); });
}

// The collective itself, checked like a kernel: for each recorded all-reduce
// (step, bucket, call), the mean of every rank's recorded input bucket,
// summed in float64 in rank order and rounded once, is the reference, and
// rank 0's recorded output the candidate. Merged per op name and judged by
// the Detector as a reduction of `world` terms: another summation order is
// ROUNDING, a collective that loses or repeats a rank's bucket is not.
struct CollectiveCheck {
  std::string name;
  uint64_t calls = 0, skipped = 0;
  peat_signature_t signature{};
  peat_detection_t detection{};
  bool detected = false;
};

template <typename T>
void mean_into(std::vector<double>& acc, const DLTensor& t) {
  const T* p = static_cast<const T*>(t.data);
  for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += static_cast<double>(p[i]);
}

std::vector<CollectiveCheck> check_collectives(const std::vector<RankTrace>& set,
                                               const std::vector<std::map<Item, Where>>& index,
                                               const std::vector<std::pair<Item, Where>>& order) {
  std::map<std::string, CollectiveCheck> by_name;
  std::vector<std::string> names;
  const int world = static_cast<int>(set.size());
  for (const auto& [item, where0] : order) {
    if (item.kind != "collective" || where0.index != 0) continue;
    auto [it, inserted] = by_name.try_emplace(item.name);
    CollectiveCheck& c = it->second;
    if (inserted) {
      c.name = item.name;
      peat_signature_init(&c.signature);
      names.push_back(item.name);
    }
    // Rank 0's output, every rank's input 0 of the same record key.
    const peat::owned_tensor out =
        checked(set[0].path, [&] { return set[0].reader.load_tensor(where0.record, PEAT_TRACE_SLOT_OUTPUT, 0); });
    const DLDataType dt = out->dl_tensor.dtype;
    const int64_t n = checked(set[0].path, [&] { return peat::numel(&out->dl_tensor); });
    const bool f32 = dt.code == kDLFloat && dt.bits == 32 && dt.lanes == 1;
    const bool f64 = dt.code == kDLFloat && dt.bits == 64 && dt.lanes == 1;
    bool ok = f32 || f64;
    std::vector<double> acc(static_cast<std::size_t>(n), 0.0);
    for (int r = 0; r < world && ok; ++r) {
      const auto found = index[static_cast<std::size_t>(r)].find(item);
      if (found == index[static_cast<std::size_t>(r)].end()) {
        ok = false;
        break;
      }
      // An input that cannot be read, or does not fit the output, skips the call.
      bool fits = false;
      const auto unread = failure([&] {
        const peat::owned_tensor in =
            set[static_cast<std::size_t>(r)].reader.load_tensor(found->second.record, PEAT_TRACE_SLOT_INPUT, 0);
        const DLTensor& x = in->dl_tensor;
        fits = peat::numel(&x) == n && x.dtype.code == dt.code && x.dtype.bits == dt.bits;
        if (!fits) return;
        if (f32) mean_into<float>(acc, x);
        else mean_into<double>(acc, x);
      });
      if (unread || !fits) {
        ok = false;
        break;
      }
    }
    if (!ok) {
      ++c.skipped;
      continue;
    }
    std::vector<unsigned char> ref_bytes(static_cast<std::size_t>(n) * (f32 ? 4 : 8));
    for (std::size_t i = 0; i < acc.size(); ++i) {
      if (f32) reinterpret_cast<float*>(ref_bytes.data())[i] = static_cast<float>(acc[i] / world);
      else reinterpret_cast<double*>(ref_bytes.data())[i] = acc[i] / world;
    }
    DLTensor ref = out->dl_tensor;
    ref.data = ref_bytes.data();
    ref.strides = nullptr;
    ref.byte_offset = 0;
    peat_signature_config_t cfg;
    peat_signature_config_init(&cfg);
    cfg.reduction_length = world;
    checked(set[0].path, [&] { peat::accumulate(c.signature, &ref, &out->dl_tensor, &cfg); });
    ++c.calls;
  }
  std::vector<CollectiveCheck> out;
  for (const std::string& name : names) {
    CollectiveCheck c = by_name.at(name);
    peat_detect_context_t ctx;
    peat_detect_context_init(&ctx);
    ctx.op_kind = PEAT_OP_KIND_REDUCTION;
    ctx.reduction_length = world;
    peat_detection_init(&c.detection);
    c.detected = c.signature.count > 0 && !failure([&] { c.detection = peat::detect(c.signature, &ctx); });
    out.push_back(c);
  }
  return out;
}

}  // namespace

int run_compare_ranks(const CompareRanksOptions& opt) {
  const std::vector<RankTrace> set = open_rank_set(opt.traces);
  const int world = static_cast<int>(set.size());
  std::vector<std::map<Item, Where>> index(set.size());
  std::vector<std::pair<Item, Where>> order;
  for (std::size_t r = 0; r < set.size(); ++r) {
    auto items = items_of(set[r], opt.collective_glob);
    if (r == 0) order = items;
    for (auto& [item, where] : items) index[r].emplace(item, where);
  }
  uint64_t checked = 0, divergent = 0, collectives = 0, checkpoints = 0;
  nlohmann::json first;
  for (const auto& [item, where0] : order) {
    ++checked;
    (item.kind == "collective" ? collectives : checkpoints)++;
    // Ranks grouped by checksum (a rank without the item is its own group).
    std::map<uint64_t, std::vector<int>> groups;
    std::vector<int> absent;
    for (int r = 0; r < world; ++r) {
      const auto it = index[static_cast<std::size_t>(r)].find(item);
      if (it == index[static_cast<std::size_t>(r)].end()) absent.push_back(r);
      else groups[it->second.checksum].push_back(r);
    }
    if (groups.size() == 1 && absent.empty()) continue;
    ++divergent;
    if (!first.is_null()) continue;
    // The reference: the largest group; on a tie the one holding the lowest rank.
    const std::vector<int>* ref = nullptr;
    for (const auto& [sum, ranks] : groups)
      if (ref == nullptr || ranks.size() > ref->size() || (ranks.size() == ref->size() && ranks[0] < (*ref)[0]))
        ref = &ranks;
    std::vector<int> odd = absent;
    for (const auto& [sum, ranks] : groups)
      if (&ranks != ref) odd.insert(odd.end(), ranks.begin(), ranks.end());
    std::sort(odd.begin(), odd.end());
    first = {{"step", item.step},
             {"kind", item.kind},
             {"name", item.name},
             {"layer", item.layer},
             {"call", item.call},
             {"tensor", item.tensor},
             {"rank", odd.front()},
             {"trace", set[static_cast<std::size_t>(odd.front())].path},
             {"ranks", odd},
             {"reference_ranks", *ref},
             {"majority", 2 * ref->size() > static_cast<std::size_t>(world)}};
    const int r = odd.front();
    const auto it = index[static_cast<std::size_t>(r)].find(item);
    if (it == index[static_cast<std::size_t>(r)].end()) {
      first["why"] = "rank " + std::to_string(r) + " has no such record";
    } else {
      const int ref_rank = (*ref)[0];
      const peat_signature_t sig = difference(set[static_cast<std::size_t>(ref_rank)],
                                              index[static_cast<std::size_t>(ref_rank)].at(item),
                                              set[static_cast<std::size_t>(r)], it->second);
      first["elements"] = sig.count;
      first["bitwise_mismatches"] = sig.bitwise_mismatch_count;
      first["max_abs_error"] = json_number(sig.max_abs_error);
      first["max_rel_error"] = json_number(sig.max_rel_error);
    }
  }
  const bool consistent = divergent == 0;
  const std::vector<CollectiveCheck> collectives_checked = check_collectives(set, index, order);
  if (opt.json) {
    nlohmann::json j;
    j["schema_version"] = 1;
    j["command"] = "compare --ranks";
    j["run_id"] = set[0].run_id;
    j["world"] = world;
    nlohmann::json traces = nlohmann::json::array();
    for (const RankTrace& t : set) traces.push_back(t.path);
    j["traces"] = traces;
    j["checked"] = {{"items", checked}, {"collective_outputs", collectives}, {"checkpoint_tensors", checkpoints}};
    j["consistent"] = consistent;
    j["divergent_items"] = divergent;
    if (!first.is_null()) j["first_divergence"] = first;
    nlohmann::json cs = nlohmann::json::array();
    for (const CollectiveCheck& c : collectives_checked) {
      nlohmann::json o = signature_json(c.signature);
      o["op"] = c.name;
      o["calls"] = c.calls;
      o["skipped"] = c.skipped;
      o["verdicts"] = verdicts_json(c.detection, c.detected);
      cs.push_back(std::move(o));
    }
    j["collectives"] = cs;
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::printf("run %s, %d ranks: %llu items checked (%llu all-reduced gradient tensors, %llu parameter tensors)\n",
                printable(set[0].run_id).c_str(), world, static_cast<unsigned long long>(checked),
                static_cast<unsigned long long>(collectives), static_cast<unsigned long long>(checkpoints));
    if (consistent) {
      std::printf("consistent: every rank holds the same bytes for every one\n");
    } else {
      std::printf("DIVERGED at step %lld: %s %s%s%s tensor '%s': rank %d (%s) differs from ranks",
                  static_cast<long long>(first["step"].get<int64_t>()), first["kind"].get<std::string>().c_str(),
                  printable(first["name"].get<std::string>()).c_str(),
                  first["layer"].get<std::string>().empty() ? "" : " ",
                  printable(first["layer"].get<std::string>()).c_str(),
                  printable(first["tensor"].get<std::string>()).c_str(), first["rank"].get<int>(),
                  printable(first["trace"].get<std::string>()).c_str());
      for (const auto& r : first["reference_ranks"]) std::printf(" %d", r.get<int>());
      if (first.contains("bitwise_mismatches"))
        std::printf(" (%llu of %llu elements, max abs error %.3g)",
                    static_cast<unsigned long long>(first["bitwise_mismatches"].get<uint64_t>()),
                    static_cast<unsigned long long>(first["elements"].get<uint64_t>()),
                    first["max_abs_error"].is_null() ? 0.0 : first["max_abs_error"].get<double>());
      std::printf("; %llu divergent items in all\n", static_cast<unsigned long long>(divergent));
    }
    for (const CollectiveCheck& c : collectives_checked)
      std::printf("collective %s: %llu calls against the float64 mean of the ranks' buckets: %s (max rel %.3g)\n",
                  printable(c.name).c_str(), static_cast<unsigned long long>(c.calls),
                  top_verdict(c.detection, c.detected).c_str(), c.signature.max_rel_error);
  }
  if (checked == 0)
    throw CliError(kBadInput, "no checkpoint and no op matching '" + opt.collective_glob + "' in " + set[0].path +
                                  ": nothing to compare across ranks");
  return consistent ? kOk : kFindings;
}

}  // namespace peat::cli
