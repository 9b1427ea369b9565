// What the hook needs to know about one aten overload, read once from its
// schema when the hook attaches: argument names, which arguments the op
// writes to, the names of its results (peat/torch_ops.py op_schema is the
// same reading on the Python side, and defines the names).
#pragma once

#include "bindings/torch/peat_torch.h"

#include <ATen/core/function_schema.h>

#include <cstdint>
#include <string>
#include <vector>

namespace peat_torch {

struct OpInfo {
  std::string packet;                  // "convolution"
  uint32_t index = 0;                  // the packet's place in the hook's op list
  size_t n_arguments = 0;              // every schema argument (what the boxed stack holds)
  std::vector<std::string> names;      // names of the positional (not keyword-only) arguments
  std::vector<char> is_dtype;          // per positional argument: a ScalarType (recorded as "torch.float32")
  std::vector<char> is_enum;           // ... a Layout or MemoryFormat (an int when boxed; not recorded,
                                       // as a dispatch mode sees an object it does not record)
  std::vector<c10::optional<c10::IValue>> defaults;  // per positional argument, from the schema
  std::vector<size_t> writes;          // positional arguments the op writes to, ascending
  std::vector<std::string> returns;    // result names ("" where neither schema nor spec names one)
};

// How many positional arguments a dispatch mode is handed for this call:
// torch leaves out the trailing ones equal to their defaults
// (parseIValuesToPyArgsKwargs), and a record names what a mode saw.
size_t passed_positionals(const OpInfo& info, const c10::IValue* args);

// The OpInfo of `schema` for the op `spec` (spec's output names fill unnamed
// results when there are as many; spec's extra writes join the annotated ones).
OpInfo op_info(const c10::FunctionSchema& schema, const peat_torch_op_spec_t& spec, uint32_t index);

}  // namespace peat_torch
