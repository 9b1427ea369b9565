// Runs one candidate call in a forked worker process (playback's `isolate`
// option, peat/playback.h), so that a candidate that crashes, hangs or writes
// outside its outputs costs one record, not the process.
//
// Each output lives in shared memory between two PROT_NONE guard pages; the
// few bytes between the (64-byte aligned) output and the guard page after it,
// and before it, hold a canary pattern. A write that reaches a guard page kills
// the worker (SIGSEGV); a write into the canary slack is found after the call.
#pragma once

#include <peat/core.h>
#include <peat/injector.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace peat::impl::playback {

struct IsolatedOutcome {
  peat_status_t status = PEAT_STATUS_OK;  // OK: the outputs were copied back
  std::string message;                    // why not, without file/record (the caller adds them)
};

// Calls fn(ctx, inputs, n_in, worker copies of outputs, n_out, attrs) in a
// child process and waits at most timeout_ms (0 = no limit). On success the
// outputs' bytes (output_bytes[i] bytes at outputs[i].data) receive what the
// candidate wrote. The candidate must leave each output's view unchanged, as
// in-process playback requires. `what` names the candidate in messages.
IsolatedOutcome run_isolated(peat_kernel_fn fn, void* ctx, const DLTensor* inputs, int32_t n_in,
                             DLTensor* outputs, const std::vector<std::size_t>& output_bytes, int32_t n_out,
                             const void* attrs, uint32_t timeout_ms, const std::string& what);

}  // namespace peat::impl::playback
