// The hook: a boxed kernel on torch's ADInplaceOrView key for each handled
// overload, the module stack and the backward attribution, and the C entry
// points of peat_torch.h.
//
// Why ADInplaceOrView: it sits right below autograd, so forward and backward
// calls of an op both pass through it, once each, as they pass a Python
// dispatch mode; functional ops (all of PeatMode's DEFAULT_OPS) have only a
// fallthrough there, so a kernel of ours replaces nothing. The kernel
// redispatches to the keys after ADInplaceOrView: the op runs as it would
// have, and the calls made inside it are not seen (autograd's guard excludes
// this key for them), as a dispatch mode does not see them either.
//
// Why the kernels stay registered after detach: torch's dispatcher does not
// support changing an op's kernels while another thread calls it (a call
// that raced a removal ran torch's fallthrough kernel and failed an internal
// assertion, seen in test_leaving_while_another_thread_runs_hooked_ops). So
// an overload is registered once per process, the first time a hook asks for
// it, and a call finds in the attached hook (if any) whether and how to
// handle it; with no hook attached it is passed straight on.
#include "bindings/torch/call_record.hpp"
#include "bindings/torch/op_table.hpp"
#include "bindings/torch/peat_torch.h"

#include <ATen/SequenceNumber.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/graph_task.h>
#include <torch/library.h>
#include <torch/version.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

struct peat_torch_hook {
  peat_session_t* session = nullptr;
  peat_profiler_t* profiler = nullptr;
  bool record_inputs = true;
  // by registration id (see Registry): the overloads this hook handles
  std::vector<std::shared_ptr<const peat_torch::OpInfo>> infos;
  std::vector<std::string> packets;  // handled op names, by OpInfo::index
  at::CallbackHandle backward_callback = at::INVALID_CALLBACK_HANDLE;

  // Everything below is guarded by `mutex` (backward may run on the engine's threads).
  std::mutex mutex;
  std::deque<std::string> paths{""};  // by id; a deque keeps references stable as it grows
  std::unordered_map<std::string, uint32_t> path_ids{{"", 0}};
  std::thread::id owner;         // the thread that attached: its ops, and backward's, are handled
  std::vector<uint32_t> stack;  // module path ids, innermost last
  // (first autograd sequence number, innermost module path id) from there on:
  // the module whose forward created a node, found by its sequence number.
  // At most 2^20 change points (16 MiB; a ResNet-18 forward makes 136): the
  // oldest half is dropped then, and a backward of a forward that far back
  // names its ops without a module (counted in ops_unnamed_backward).
  std::vector<std::pair<uint64_t, uint32_t>> changes;
  std::unordered_map<uint64_t, uint32_t> op_ids;  // path id << 32 | packet index -> peat op id
  std::set<std::string> warned;                   // op names warned about (tensor lists)
  peat_phase_t default_phase = PEAT_PHASE_FORWARD;
  int session_phase = -1;  // the phase last set on the session
  peat_torch_hook_stats_t stats{};

  // A change point at the current sequence number (module entry or exit).
  void mark_change() {
    const uint64_t seq = at::sequence_number::peek();
    const uint32_t path = stack.empty() ? 0 : stack.back();
    if (!changes.empty() && changes.back().first == seq) {
      changes.back().second = path;
    } else {
      if (changes.size() >= (size_t{1} << 20)) changes.erase(changes.begin(), changes.begin() + (changes.size() / 2));
      changes.emplace_back(seq, path);
    }
  }
  // The module path id in force when sequence number `seq` was taken (0: none).
  uint32_t path_of_sequence(int64_t seq) const {
    if (seq < 0) return 0;
    auto it = std::upper_bound(changes.begin(), changes.end(), std::make_pair(static_cast<uint64_t>(seq), UINT32_MAX));
    return it == changes.begin() ? 0 : std::prev(it)->second;
  }
};

namespace peat_torch {
namespace {

std::mutex g_attach_mutex;

// The overloads this process registered a kernel for (guarded by
// g_attach_mutex), and the libraries holding the registrations. Never freed:
// torch's dispatcher may outlive static destructors at exit.
struct Registry {
  std::unordered_map<std::string, uint32_t> ids;  // "aten::mm" / "aten::add.Tensor" -> registration id
  std::vector<std::unique_ptr<torch::Library>> libraries;
};
Registry& registry() {
  static auto* r = new Registry;
  return *r;
}
std::atomic<peat_torch_hook*> g_hook{nullptr};
// Kernel calls between their reading g_hook and their return: detach waits
// for them to end before it frees the hook (an op on another thread, or a
// backward on the engine's threads, may still be inside one).
std::atomic<int64_t> g_in_flight{0};

struct InFlight {
  InFlight() { g_in_flight.fetch_add(1); }  // sequentially consistent with detach's store and wait
  ~InFlight() { g_in_flight.fetch_sub(1); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
};
thread_local std::string t_error;
// The sequence number of the autograd node the engine runs on this thread (-1: none).
thread_local int64_t t_backward_sequence = -1;

peat_status_t fail(peat_status_t status, std::string message) {
  t_error = std::move(message);
  return status;
}

// Whether a node started inside another's run (a backward that runs another
// graph's nodes): the outer node's number comes back when the inner ends.
struct OuterSequence final : at::ObserverContext {
  OuterSequence(int64_t s, bool n) : sequence(s), nested(n) {}
  int64_t sequence;
  bool nested;
};
thread_local int t_node_depth = 0;

std::unique_ptr<at::ObserverContext> on_backward_start(const at::RecordFunction& fn) {
  auto outer = std::make_unique<OuterSequence>(t_backward_sequence, t_node_depth > 0);
  ++t_node_depth;
  t_backward_sequence = fn.seqNr();
  return outer;
}
// After a node, the engine's own work (adding up the gradients of a tensor
// used twice) keeps its number: it is named after the module of the node
// that ran last, as PeatMode names it after the module whose output's
// gradient came last.
void on_backward_end(const at::RecordFunction&, at::ObserverContext* ctx) {
  --t_node_depth;
  if (const auto* outer = static_cast<OuterSequence*>(ctx); outer != nullptr && outer->nested)
    t_backward_sequence = outer->sequence;
}

// The name, id and phase of one hooked call.
struct Site {
  uint32_t op = 0;
  peat_phase_t phase = PEAT_PHASE_FORWARD;
  const std::string* path = nullptr;  // into the hook's paths (no copy per call)
  bool set_phase = false;
};

// The call's site; nullopt for a call the hook leaves alone (another
// thread's, outside backward: a dispatch mode does not see those either).
std::optional<Site> site_of(peat_torch_hook& h, const OpInfo& info) {
  Site s;
  uint32_t path = 0;
  const bool backward = torch::autograd::get_current_graph_task_exec_info() != nullptr;
  const bool owner = std::this_thread::get_id() == h.owner;
  if (!owner && !backward) return std::nullopt;
  std::lock_guard<std::mutex> lock(h.mutex);
  if (owner && !h.stack.empty()) {  // inside a module's forward
    path = h.stack.back();
  } else if (backward) {  // the engine runs a node
    s.phase = PEAT_PHASE_BACKWARD;
    path = h.path_of_sequence(t_backward_sequence);
    if (path == 0) ++h.stats.ops_unnamed_backward;
  } else {
    s.phase = h.default_phase;
  }
  ++h.stats.ops_handled;
  s.path = &h.paths[path];
  const uint64_t key = (uint64_t{path} << 32) | info.index;
  auto it = h.op_ids.find(key);
  if (it == h.op_ids.end()) {
    const std::string name = (path ? *s.path + "/aten::" : std::string("aten::")) + info.packet;
    uint32_t id = 0;
    const peat_status_t st = peat_session_intern_op(h.session, name.c_str(), &id);
    TORCH_CHECK(st == PEAT_STATUS_OK, "peat.torch: cannot name op ", name, ": ", peat_last_error_message());
    it = h.op_ids.emplace(key, id).first;
  }
  s.op = it->second;
  if (static_cast<int>(s.phase) != h.session_phase) {  // injector policies' phase masks read the session's
    h.session_phase = s.phase;
    s.set_phase = true;
  }
  return s;
}

class HookKernel final : public c10::OperatorKernel {
 public:
  explicit HookKernel(uint32_t id) : id_(id) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
    const c10::DispatchKeySet next = ks & c10::after_ADInplaceOrView_keyset;
    const InFlight in_flight;
    peat_torch_hook* h = g_hook.load();
    if (h == nullptr || id_ >= h->infos.size() || !h->infos[id_]) {  // no hook, or not one of its ops
      op.redispatchBoxed(next, stack);
      return;
    }
    const OpInfo& info = *h->infos[id_];
    const std::optional<Site> site = site_of(*h, info);
    if (!site) {
      op.redispatchBoxed(next, stack);
      return;
    }
    const Site& s = *site;
    if (s.set_phase) peat_session_set_phase(h->session, s.phase);
    uint64_t call = 0;
    TORCH_CHECK(peat_session_next_call(h->session, s.op, &call) == PEAT_STATUS_OK, "peat.torch: ",
                peat_last_error_message());
    int32_t sampled = 0;
    if (h->profiler != nullptr) {
      TORCH_CHECK(peat_profiler_should_record(h->profiler, s.op, call, -1, &sampled) == PEAT_STATUS_OK,
                  "peat.torch: ", peat_last_error_message());
    }
    if (!sampled) {
      op.redispatchBoxed(next, stack);
      return;
    }
    // Recorded: keep the arguments (the redispatch pops them) and copy what the op overwrites.
    TORCH_CHECK(stack->size() >= info.n_arguments, "peat.torch: ", info.packet, ": short argument stack");
    const size_t base = stack->size() - info.n_arguments;
    const size_t passed = passed_positionals(info, stack->data() + base);
    std::vector<c10::IValue> args(stack->begin() + static_cast<std::ptrdiff_t>(base),
                                  stack->begin() + static_cast<std::ptrdiff_t>(base + passed));
    std::vector<std::pair<size_t, at::Tensor>> before;
    {
      at::AutoDispatchBelowADInplaceOrView guard;  // the copies are not ops of the program
      before = copy_written(info, args);
    }
    const size_t below = base;
    op.redispatchBoxed(next, stack);
    const c10::ArrayRef<c10::IValue> results(stack->data() + below, stack->size() - below);
    at::AutoDispatchBelowADInplaceOrView guard;
    const Call c{info, args, std::move(before), results};
    int32_t recorded = 0;
    bool tensor_list = false;
    std::string message;
    const peat_status_t st = record_call(h->profiler, s.op, call, s.phase, s.path->c_str(), c, h->record_inputs,
                                         &recorded, &tensor_list, &message);
    TORCH_CHECK(st == PEAT_STATUS_OK, "peat.torch: cannot record ", info.packet, " call ", call, ": ", message);
    std::lock_guard<std::mutex> lock(h->mutex);
    if (recorded) ++h->stats.ops_recorded;
    if (tensor_list) {
      const std::string name = (s.path->empty() ? std::string() : *s.path + "/") + "aten::" + info.packet;
      if (h->warned.insert(name).second) {
        const std::string text = "peat.torch: " + name +
                                 ": a tensor-list argument: the call is recorded but cannot be rebuilt on replay";
        peat_session_log(h->session, PEAT_LOG_WARNING, text.c_str());
      }
    }
  }

 private:
  uint32_t id_;  // registration id
};

}  // namespace
}  // namespace peat_torch

using peat_torch::fail;

extern "C" peat_status_t peat_torch_hook_attach(peat_session_t* session, peat_profiler_t* profiler,
                                                const peat_torch_op_spec_t* ops, uint64_t n_ops,
                                                int32_t record_inputs, peat_torch_hook_t** out) {
  if (session == nullptr || out == nullptr || (ops == nullptr && n_ops > 0))
    return fail(PEAT_STATUS_INVALID_ARGUMENT, "peat_torch_hook_attach: session, out and ops must not be NULL");
  std::lock_guard<std::mutex> lock(peat_torch::g_attach_mutex);
  if (peat_torch::g_hook.load() != nullptr)
    return fail(PEAT_STATUS_BAD_STATE, "peat_torch_hook_attach: a hook is already attached in this process");
  auto h = std::make_unique<peat_torch_hook>();
  h->owner = std::this_thread::get_id();
  h->session = session;
  h->profiler = profiler;
  h->record_inputs = record_inputs != 0;
  // every overload of each op, from the dispatcher's table of registered operators
  const auto all = c10::Dispatcher::singleton().getAllOpNames();
  peat_torch::Registry& reg = peat_torch::registry();
  try {
    torch::Library* library = nullptr;  // this attach's new registrations (kept in the registry at once)
    for (uint64_t i = 0; i < n_ops; ++i) {
      const peat_torch_op_spec_t& spec = ops[i];
      if (spec.struct_size < sizeof(peat_torch_op_spec_t) || spec.op == nullptr ||
          (spec.output_names == nullptr && spec.n_output_names > 0) ||
          (spec.extra_writes == nullptr && spec.n_extra_writes > 0))
        return fail(PEAT_STATUS_INVALID_ARGUMENT,
                    "peat_torch_hook_attach: ops[" + std::to_string(i) + "] is not a filled peat_torch_op_spec_t");
      const std::string full = std::string("aten::") + spec.op;
      const auto index = static_cast<uint32_t>(h->packets.size());
      bool found = false, hooked = false;
      for (const c10::OperatorName& name : all) {
        if (name.name != full) continue;
        found = true;
        auto handle = c10::Dispatcher::singleton().findOp(name);
        if (!handle || !handle->hasSchema()) continue;
        const std::string key = name.overload_name.empty() ? full : full + "." + name.overload_name;
        auto known = reg.ids.find(key);
        if (known == reg.ids.end()) {
          if (handle->hasKernelForDispatchKey(c10::DispatchKey::ADInplaceOrView))
            continue;  // an in-place, view or out= overload keeps its own kernel here
          if (library == nullptr) {
            reg.libraries.push_back(std::make_unique<torch::Library>(
                torch::Library::IMPL, "aten", c10::DispatchKey::ADInplaceOrView, __FILE__, __LINE__));
            library = reg.libraries.back().get();
          }
          const auto id = static_cast<uint32_t>(reg.ids.size());
          const std::string overload =
              name.overload_name.empty() ? spec.op : std::string(spec.op) + "." + name.overload_name;
          library->impl(overload.c_str(),
                        torch::CppFunction::makeFromBoxedFunctor(std::make_unique<peat_torch::HookKernel>(id)));
          known = reg.ids.emplace(key, id).first;
        }
        hooked = true;
        if (h->infos.size() <= known->second) h->infos.resize(known->second + 1);
        h->infos[known->second] =
            std::make_shared<const peat_torch::OpInfo>(peat_torch::op_info(handle->schema(), spec, index));
      }
      if (!found)
        return fail(PEAT_STATUS_NOT_FOUND, std::string("peat_torch_hook_attach: torch has no op aten::") + spec.op);
      if (!hooked)
        return fail(PEAT_STATUS_UNSUPPORTED, std::string("peat_torch_hook_attach: aten::") + spec.op +
                                                 " has no overload the hook can take: each has its own "
                                                 "ADInplaceOrView kernel (an in-place, view or out= op)");
      h->packets.emplace_back(spec.op);
    }
    h->backward_callback = at::addGlobalCallback(
        at::RecordFunctionCallback(peat_torch::on_backward_start, peat_torch::on_backward_end)
            .scopes({at::RecordScope::BACKWARD_FUNCTION}));
  } catch (const std::exception& e) {
    return fail(PEAT_STATUS_INTERNAL, std::string("peat_torch_hook_attach: torch refused the kernels: ") + e.what());
  }
  {
    std::lock_guard<std::mutex> l(h->mutex);
    h->mark_change();
  }
  peat_torch::g_hook.store(h.get(), std::memory_order_release);
  *out = h.release();
  return PEAT_STATUS_OK;
}

extern "C" void peat_torch_hook_detach(peat_torch_hook_t* hook) {
  if (hook == nullptr) return;
  std::lock_guard<std::mutex> lock(peat_torch::g_attach_mutex);
  if (peat_torch::g_hook.load() == hook) peat_torch::g_hook.store(nullptr);
  while (peat_torch::g_in_flight.load() != 0) std::this_thread::yield();  // calls that still use it
  if (hook->backward_callback != at::INVALID_CALLBACK_HANDLE) at::removeCallback(hook->backward_callback);
  delete hook;
}

extern "C" peat_status_t peat_torch_path_intern(peat_torch_hook_t* hook, const char* path, uint32_t* out_id) {
  if (hook == nullptr || path == nullptr || out_id == nullptr)
    return fail(PEAT_STATUS_INVALID_ARGUMENT, "peat_torch_path_intern: hook, path and out_id must not be NULL");
  std::lock_guard<std::mutex> lock(hook->mutex);
  auto it = hook->path_ids.find(path);
  if (it == hook->path_ids.end()) {
    it = hook->path_ids.emplace(path, static_cast<uint32_t>(hook->paths.size())).first;
    hook->paths.emplace_back(path);
  }
  *out_id = it->second;
  return PEAT_STATUS_OK;
}

extern "C" void peat_torch_module_enter(peat_torch_hook_t* hook, uint32_t path_id) {
  if (hook == nullptr) return;
  std::lock_guard<std::mutex> lock(hook->mutex);
  hook->stack.push_back(path_id < hook->paths.size() ? path_id : 0);
  hook->mark_change();
}

extern "C" void peat_torch_module_exit(peat_torch_hook_t* hook) {
  if (hook == nullptr) return;
  std::lock_guard<std::mutex> lock(hook->mutex);
  if (hook->stack.empty()) return;
  hook->stack.pop_back();
  hook->mark_change();
}

extern "C" void peat_torch_module_reset(peat_torch_hook_t* hook) {
  if (hook == nullptr) return;
  std::lock_guard<std::mutex> lock(hook->mutex);
  if (hook->stack.empty()) return;
  hook->stack.clear();
  hook->mark_change();
}

extern "C" peat_status_t peat_torch_set_default_phase(peat_torch_hook_t* hook, peat_phase_t phase) {
  if (hook == nullptr) return fail(PEAT_STATUS_INVALID_ARGUMENT, "peat_torch_set_default_phase: hook is NULL");
  if (phase < PEAT_PHASE_FORWARD || phase > PEAT_PHASE_OTHER)
    return fail(PEAT_STATUS_INVALID_ARGUMENT,
                "peat_torch_set_default_phase: phase " + std::to_string(static_cast<int>(phase)) + " is out of range");
  std::lock_guard<std::mutex> lock(hook->mutex);
  hook->default_phase = phase;
  return PEAT_STATUS_OK;
}

extern "C" peat_status_t peat_torch_hook_stats(const peat_torch_hook_t* hook, peat_torch_hook_stats_t* out) {
  if (hook == nullptr || out == nullptr || out->struct_size < sizeof(peat_torch_hook_stats_t))
    return fail(PEAT_STATUS_INVALID_ARGUMENT, "peat_torch_hook_stats: NULL argument or struct_size too small");
  auto* h = const_cast<peat_torch_hook_t*>(hook);
  std::lock_guard<std::mutex> lock(h->mutex);
  const uint32_t size = out->struct_size;
  *out = h->stats;
  out->struct_size = size < sizeof(peat_torch_hook_stats_t) ? size : static_cast<uint32_t>(sizeof(peat_torch_hook_stats_t));
  return PEAT_STATUS_OK;
}

extern "C" const char* peat_torch_torch_version(void) { return TORCH_VERSION; }

extern "C" const char* peat_torch_last_error(void) { return peat_torch::t_error.c_str(); }
