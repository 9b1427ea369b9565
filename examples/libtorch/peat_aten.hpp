// peat_aten — a framework-fork integration of PEAT on libtorch: the CPU
// kernels of aten::mm, aten::addmm and aten::convolution are overridden
// (TORCH_LIBRARY_IMPL, see peat_aten.cpp) and every call is routed through the
// PEAT injector with peat.hpp. The golden is the original kernel (at::cpu::mm,
// at::cpu::addmm, at::compositeexplicitautograd::convolution); a candidate is
// loaded as "libx.so:symbol". Calls can be recorded into a trace and replayed
// by Playback with peat_aten_golden (kernels.cpp), and runtime FI swaps the
// candidate in on the injector's schedule.
//
// Until attach() is called (and after detach()) the overrides call the golden
// kernel directly.
#pragma once

#include <peat/peat.hpp>

#include <cstdint>
#include <string>

namespace peat_aten {

struct Config {
  std::string trace_path;                    // record every call into this trace when not empty
  std::string candidate;                     // "libx.so:symbol" (a peat_kernel_fn) for runtime FI
  std::string candidate_ops = "aten::mm";    // ops (glob) the candidate replaces
  peat_action_t action = PEAT_ACTION_RUN_CANDIDATE;
  uint64_t every_n = 0;                      // FI on every n-th call of those ops; 0: none
  uint64_t phase_offset = 0;                 // ... at calls c with c % every_n == phase_offset
};

// Starts routing through a new session (and injector, and profiler when
// recording). Throws peat::error. Not thread-safe against running ops.
__attribute__((visibility("default"))) void attach(const Config& config);
// Stops routing; closes the trace. Returns the number of records written.
__attribute__((visibility("default"))) uint64_t detach();
// The session and injector while attached (for steps, firings); NULL otherwise.
__attribute__((visibility("default"))) peat::session* session();
__attribute__((visibility("default"))) peat::injector* injector();

}  // namespace peat_aten

// The golden kernel of every overridden op as a peat_kernel_fn (Playback's
// candidate for same-op replay: "libpeat_aten.so:peat_aten_golden"). `attrs`
// is a peat_playback_attrs_t whose `op` names the op.
extern "C" __attribute__((visibility("default"))) int32_t peat_aten_golden(void* ctx, const DLTensor* inputs,
                                                                          int32_t n_in, DLTensor* outputs,
                                                                          int32_t n_out, const void* attrs);

// attach() / detach() for a program that dlopens the library (the benchmark
// measures torch before the overrides exist): NULL or "" leaves a field at its
// default. Returns 0, or 1 with the message on stderr.
extern "C" __attribute__((visibility("default"))) int peat_aten_attach(const char* trace, const char* candidate,
                                                                      const char* ops, uint64_t every_n);
extern "C" __attribute__((visibility("default"))) uint64_t peat_aten_detach(void);
