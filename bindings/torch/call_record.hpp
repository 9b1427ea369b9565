// One hooked call turned into a PEAT record: the tensors as DLTensor views
// (device tensors with strides through a host copy, as PeatMode does), their
// names, and the attributes that let a replay rebuild the call
// (peat/torch_ops.py _attrs defines them; this is the same reading of boxed
// arguments).
#pragma once

#include "bindings/torch/op_table.hpp"

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace peat_torch {

struct Call {
  const OpInfo& info;
  c10::ArrayRef<c10::IValue> args;                   // positional arguments (read after the op: unchanged)
  std::vector<std::pair<size_t, at::Tensor>> before;  // written arguments as they were before the op
  c10::ArrayRef<c10::IValue> results;                // the op's returns
};

// A copy of `t` with its strides (clone() makes overlapping views compact;
// those get a buffer of their span) -- PeatMode's _clone_layout.
at::Tensor clone_layout(const at::Tensor& t);

// Copies (clone_layout) of the tensor arguments the op writes to, taken
// before it runs: a record holds the inputs as the kernel read them.
std::vector<std::pair<size_t, at::Tensor>> copy_written(const OpInfo& info, c10::ArrayRef<c10::IValue> args);

// Records the call with the profiler (the caller decided it is sampled).
// *out_tensor_list = true when an argument was a tensor list (recorded, but a
// replay cannot rebuild it). Returns the profiler's status; a tensor PEAT
// cannot view (a dtype without a DLPack mapping) gives INVALID_ARGUMENT with
// the argument's name in *message.
peat_status_t record_call(peat_profiler_t* profiler, uint32_t op, uint64_t call, peat_phase_t phase,
                          const char* module_path, const Call& c, bool record_inputs, int32_t* out_recorded,
                          bool* out_tensor_list, std::string* message);

}  // namespace peat_torch
