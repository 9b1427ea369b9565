// peat verify TRACE [--recover OUT]: checks every frame, FlatBuffer and
// tensor checksum; with --recover, copies the intact records of a trace whose
// writer was killed into a new, complete trace OUT.
#include "commands.hpp"
#include "common.hpp"

#include <cstdio>
#include <memory>
#include <vector>

namespace peat_cli {

namespace {

struct TensorFree {
  void operator()(DLManagedTensor* t) const noexcept { peat_trace_tensor_free(t); }
};
using Tensor = std::unique_ptr<DLManagedTensor, TensorFree>;

Tensor load(const peat_trace_reader_t* r, uint64_t rec, peat_trace_slot_t slot, uint64_t t, const std::string& path) {
  DLManagedTensor* m = nullptr;
  check(peat_trace_load_tensor_alloc(r, rec, slot, t, &m), path);
  return Tensor(m);
}

// Re-records every record of `r` through the profiler into `out`. Returns
// the number of records written.
uint64_t copy_trace(const peat_trace_reader_t* r, const std::string& in_path, const std::string& out) {
  peat_trace_run_info_t ri{};
  ri.struct_size = sizeof ri;
  check(peat_trace_run_info(r, &ri), in_path);
  peat_session_options_t so;
  peat_session_options_init(&so);
  so.rank = ri.rank;
  so.world_size = ri.world_size > ri.rank ? ri.world_size : ri.rank + 1;
  so.run_name = ri.run_name;
  peat_session_t* session = nullptr;
  check(peat_session_create(&so, &session), "session");
  std::unique_ptr<peat_session_t, void (*)(peat_session_t*)> session_guard(session, peat_session_destroy);
  std::vector<peat_profiler_tag_t> tags;
  for (uint64_t t = 0; t < ri.n_tags; ++t) {
    peat_profiler_tag_t tag{};
    if (peat_trace_tag(r, t, &tag.key, &tag.value) == PEAT_STATUS_OK) tags.push_back(tag);
  }
  peat_profiler_options_t po;
  peat_profiler_options_init(&po);
  po.path = out.c_str();
  po.framework = ri.framework;
  po.device = ri.device;
  po.vendor = ri.vendor;
  po.tags = tags.data();
  po.n_tags = static_cast<uint32_t>(tags.size());
  peat_profiler_t* prof = nullptr;
  check(peat_profiler_create(session, &po, &prof), out);
  std::unique_ptr<peat_profiler_t, void (*)(peat_profiler_t*)> prof_guard(prof, peat_profiler_destroy);
  uint64_t n = 0;
  check(peat_trace_record_count(r, &n), in_path);
  for (uint64_t i = 0; i < n; ++i) {
    const peat_trace_record_info_t info = record_info(r, i);
    const std::string where = in_path + ": record " + std::to_string(i);
    if (info.kind == PEAT_TRACE_KIND_OP) {
      uint32_t op = 0;
      check(peat_session_intern_op(session, info.name, &op), where);
      std::vector<peat_attr_t> attrs(info.n_attrs);
      for (uint64_t a = 0; a < info.n_attrs; ++a) check(peat_trace_attr(r, i, a, &attrs[a]), where);
      std::vector<Tensor> ins, outs;
      std::vector<const DLTensor*> in_ptr, out_ptr;
      std::vector<const char*> in_names, out_names;
      for (uint64_t t = 0; t < info.n_inputs; ++t) {
        ins.push_back(load(r, i, PEAT_TRACE_SLOT_INPUT, t, in_path));
        in_ptr.push_back(&ins.back()->dl_tensor);
        peat_trace_tensor_info_t ti{};
        ti.struct_size = sizeof ti;
        check(peat_trace_tensor_info(r, i, PEAT_TRACE_SLOT_INPUT, t, &ti), where);
        in_names.push_back(ti.name);
      }
      for (uint64_t t = 0; t < info.n_outputs; ++t) {
        outs.push_back(load(r, i, PEAT_TRACE_SLOT_OUTPUT, t, in_path));
        out_ptr.push_back(&outs.back()->dl_tensor);
        peat_trace_tensor_info_t ti{};
        ti.struct_size = sizeof ti;
        check(peat_trace_tensor_info(r, i, PEAT_TRACE_SLOT_OUTPUT, t, &ti), where);
        out_names.push_back(ti.name);
      }
      peat_op_record_t rec;
      peat_op_record_init(&rec);
      rec.op = op;
      rec.call_index = info.call_index;
      rec.step = info.step;
      rec.phase = info.phase;
      rec.force = 1;
      rec.module_path = info.module_path;
      rec.attrs = attrs.data();
      rec.n_attrs = attrs.size();
      rec.inputs = in_ptr.data();
      rec.input_names = in_names.data();
      rec.n_inputs = in_ptr.size();
      rec.outputs = out_ptr.data();
      rec.output_names = out_names.data();
      rec.n_outputs = out_ptr.size();
      check(peat_profiler_record_op(prof, &rec, nullptr, nullptr), out);
    } else if (info.kind == PEAT_TRACE_KIND_CHECKPOINT) {
      std::vector<Tensor> ts;
      std::vector<const DLTensor*> ptr;
      std::vector<const char*> names;
      for (uint64_t t = 0; t < info.n_tensors; ++t) {
        ts.push_back(load(r, i, PEAT_TRACE_SLOT_CHECKPOINT, t, in_path));
        ptr.push_back(&ts.back()->dl_tensor);
        peat_trace_tensor_info_t ti{};
        ti.struct_size = sizeof ti;
        check(peat_trace_tensor_info(r, i, PEAT_TRACE_SLOT_CHECKPOINT, t, &ti), where);
        names.push_back(ti.name);
      }
      check(peat_profiler_record_checkpoint(prof, info.name, info.step, names.data(), ptr.data(), ptr.size(), nullptr, nullptr),
            out);
    } else if (info.kind == PEAT_TRACE_KIND_SCALAR) {
      check(peat_profiler_record_scalar(prof, info.name, info.step, info.value), out);
    } else if (info.kind == PEAT_TRACE_KIND_STEP) {
      check(peat_profiler_mark_step(prof, info.step), out);
    }
  }
  check(peat_profiler_close(prof), out);
  return n;
}

int run(const std::string& path, const std::string& recover_out) {
  if (!recover_out.empty()) {
    peat_trace_reader_t* raw = nullptr;
    peat_trace_recovery_t rec{};
    rec.struct_size = sizeof rec;
    check(peat_trace_recover(path.c_str(), nullptr, &raw, &rec), path);
    TraceReader reader(raw);
    const uint64_t n = copy_trace(reader.get(), path, recover_out);
    std::printf("%s: %s; %llu intact records (%llu of %llu bytes)%s%s\n", path.c_str(), rec.complete ? "complete" : "incomplete",
                static_cast<unsigned long long>(rec.records), static_cast<unsigned long long>(rec.valid_bytes),
                static_cast<unsigned long long>(rec.file_bytes), rec.complete ? "" : "; stopped at ", rec.stop_reason);
    std::printf("recovered %llu records -> %s\n", static_cast<unsigned long long>(n), recover_out.c_str());
    return rec.complete ? kOk : kFindings;
  }
  peat_trace_reader_t* raw = nullptr;
  const peat_status_t s = peat_trace_open(path.c_str(), nullptr, &raw);
  if (s == PEAT_STATUS_CORRUPT_DATA) {
    // Damaged or truncated: a finding of verify, not a usage error.
    std::fprintf(stderr, "peat verify: %s (recover the intact records with --recover OUT)\n",
                 library_message().c_str());
    return kFindings;
  }
  check(s, path);
  TraceReader reader(raw);
  uint64_t n = 0, tensors = 0;
  check(peat_trace_record_count(raw, &n), path);
  const peat_status_t v = peat_trace_verify(raw, &tensors);
  if (v == PEAT_STATUS_CORRUPT_DATA) {
    std::fprintf(stderr, "peat verify: %s\n", library_message().c_str());
    return kFindings;
  }
  check(v, path);
  std::printf("%s: OK, %llu records, %llu tensors, every frame and checksum intact\n", path.c_str(),
              static_cast<unsigned long long>(n), static_cast<unsigned long long>(tensors));
  return kOk;
}

}  // namespace

Command add_verify(CLI::App& app) {
  auto* sub = app.add_subcommand("verify", "Check every frame and checksum of a trace; recover a truncated one");
  auto path = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  sub->add_option("TRACE", *path, "trace file")->required();
  sub->add_option("--recover", *out, "write the intact records into a new, complete trace OUT (exit 1 when the input was incomplete)");
  return {sub, [path, out] { return run(*path, *out); }};
}

}  // namespace peat_cli
