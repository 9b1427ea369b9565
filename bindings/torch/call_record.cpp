#include "bindings/torch/call_record.hpp"

#include <peat/peat.hpp>

#include <string>

namespace peat_torch {
namespace {

// torch's dtype -> DLPack (peat/_tensor.py _TORCH_DTYPES: bool as uint8).
bool dl_dtype(at::ScalarType s, DLDataType* out) {
  switch (s) {
    case at::kHalf: *out = {kDLFloat, 16, 1}; return true;
    case at::kBFloat16: *out = {kDLBfloat, 16, 1}; return true;
    case at::kFloat: *out = {kDLFloat, 32, 1}; return true;
    case at::kDouble: *out = {kDLFloat, 64, 1}; return true;
    case at::kChar: *out = {kDLInt, 8, 1}; return true;
    case at::kShort: *out = {kDLInt, 16, 1}; return true;
    case at::kInt: *out = {kDLInt, 32, 1}; return true;
    case at::kLong: *out = {kDLInt, 64, 1}; return true;
    case at::kByte:
    case at::kBool: *out = {kDLUInt, 8, 1}; return true;
    default: return false;
  }
}

// str(torch.dtype) of a ScalarType ("torch.float32"), as a record's dtype attribute.
std::string dtype_string(at::ScalarType s) {
  switch (s) {
    case at::kHalf: return "torch.float16";
    case at::kBFloat16: return "torch.bfloat16";
    case at::kFloat: return "torch.float32";
    case at::kDouble: return "torch.float64";
    case at::kChar: return "torch.int8";
    case at::kShort: return "torch.int16";
    case at::kInt: return "torch.int32";
    case at::kLong: return "torch.int64";
    case at::kByte: return "torch.uint8";
    case at::kBool: return "torch.bool";
    case at::kComplexFloat: return "torch.complex64";
    case at::kComplexDouble: return "torch.complex128";
    default: return std::string("torch.") + c10::toString(s);
  }
}

// A 0-d "wrapped number" tensor: a Python scalar torch carries as a tensor
// inside the dispatcher and hands back as a number to a dispatch mode (x * 0.5).
bool wrapped_number(const c10::IValue& v) {
  return v.isTensor() && v.toTensor().defined() && v.toTensor().unsafeGetTensorImpl()->is_wrapped_number();
}

// The tensors of a record, their names and what keeps host copies alive.
struct Tensors {
  std::vector<std::string> names;
  std::vector<at::Tensor> keep;
  void add(std::string name, const at::Tensor& t) {
    if (!t.defined() || t.is_sparse()) return;
    // the profiler stages contiguous device tensors only: others go through a host copy
    keep.push_back(!t.device().is_cpu() && !t.is_contiguous() ? t.cpu() : t);
    names.push_back(std::move(name));
  }
  // later duplicates renamed "name#1", "name#2" (peat/torch_ops.py _unique)
  void unique() {
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string base = names[i];
      for (int n = 1;; ++n) {
        bool taken = false;
        for (size_t j = 0; j < i && !taken; ++j) taken = names[j] == names[i];
        if (!taken) break;
        names[i] = base + "#" + std::to_string(n);
      }
    }
  }
};

// The tensor results of an op, each named (peat/torch_ops.py _output_items:
// a single list result is its elements, named like a tuple's).
void add_results(const OpInfo& info, c10::ArrayRef<c10::IValue> results, Tensors* out) {
  std::vector<c10::IValue> items;
  if (results.size() == 1 && results[0].isTensorList()) {
    for (const at::Tensor& t : results[0].toTensorVector()) items.emplace_back(t);
  } else {
    items.assign(results.begin(), results.end());
  }
  const bool single = items.size() == 1;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string name = i < info.returns.size() && !info.returns[i].empty()
                           ? info.returns[i]
                           : (single ? std::string("output") : "output" + std::to_string(i));
    const c10::IValue& v = items[i];
    if (v.isTensor()) {
      out->add(name, v.toTensor());
    } else if (v.isTensorList()) {
      const auto list = v.toTensorVector();
      for (size_t j = 0; j < list.size(); ++j) out->add(name + "." + std::to_string(j), list[j]);
    }
  }
}

// The integers of an int, SymInt or bool list argument; false for any other list.
bool int_list(const c10::IValue& v, std::vector<int64_t>* out, bool* all_bool) {
  *all_bool = false;
  if (v.isIntList()) {
    *out = v.toIntVector();
    return true;
  }
  if (v.isBoolList()) {
    for (bool b : v.toBoolList()) out->push_back(b ? 1 : 0);
    *all_bool = !out->empty();
    return true;
  }
  if (!v.isList()) return false;
  bool bools = true;
  for (const c10::IValue& e : v.toListRef()) {
    if (e.isBool()) {
      out->push_back(e.toBool() ? 1 : 0);
    } else if (e.isInt()) {
      out->push_back(e.toInt());
      bools = false;
    } else if (e.isSymInt()) {
      out->push_back(e.toSymInt().expect_int());
      bools = false;
    } else {
      return false;
    }
  }
  *all_bool = bools && !out->empty();
  return true;
}

// The attributes of a call (peat/torch_ops.py _attrs), owning their strings
// and integer arrays until the record is submitted.
struct Attrs {
  std::vector<std::string> keys, strings;
  std::vector<std::vector<int64_t>> ints;
  struct Entry {
    int kind;  // PEAT_ATTR_*
    size_t key;
    int64_t i = 0;
    double f = 0;
    size_t index = 0;  // into strings or ints
  };
  std::vector<Entry> entries;
  size_t key(std::string k) {
    keys.push_back(std::move(k));
    return keys.size() - 1;
  }
  void add_int(std::string k, int64_t v) { entries.push_back({PEAT_ATTR_INT, key(std::move(k)), v}); }
  void add_float(std::string k, double v) { entries.push_back({PEAT_ATTR_FLOAT, key(std::move(k)), 0, v}); }
  void add_string(std::string k, std::string v) {
    strings.push_back(std::move(v));
    entries.push_back({PEAT_ATTR_STRING, key(std::move(k)), 0, 0, strings.size() - 1});
  }
  void add_ints(std::string k, std::vector<int64_t> v) {
    ints.push_back(std::move(v));
    entries.push_back({PEAT_ATTR_INT_ARRAY, key(std::move(k)), 0, 0, ints.size() - 1});
  }
  std::vector<peat_attr_t> view() const {
    std::vector<peat_attr_t> out;
    for (const Entry& e : entries) {
      const char* k = keys[e.key].c_str();
      switch (e.kind) {
        case PEAT_ATTR_INT: out.push_back(peat::int_attr(k, e.i)); break;
        case PEAT_ATTR_FLOAT: out.push_back(peat::float_attr(k, e.f)); break;
        case PEAT_ATTR_STRING: out.push_back(peat::string_attr(k, strings[e.index].c_str())); break;
        default: out.push_back(peat::ints_attr(k, ints[e.index].data(), ints[e.index].size()));
      }
    }
    return out;
  }
};

Attrs call_attrs(const Call& c, const std::vector<int64_t>& written) {
  Attrs a;
  std::vector<int64_t> tensors, nones, bools, dtypes;
  for (size_t i = 0; i < c.args.size(); ++i) {
    const c10::IValue& v = c.args[i];
    const std::string key = "arg" + std::to_string(i);
    std::vector<int64_t> list;
    bool all_bool = false;
    if (wrapped_number(v)) {  // a number to a dispatch mode
      const at::Tensor& t = v.toTensor();
      if (t.scalar_type() == at::kBool) {
        a.add_int(key, t.item<bool>() ? 1 : 0);
        bools.push_back(static_cast<int64_t>(i));
      } else if (at::isFloatingType(t.scalar_type())) {
        a.add_float(key, t.item<double>());
      } else if (at::isIntegralType(t.scalar_type(), false)) {
        a.add_int(key, t.item<int64_t>());
      }
    } else if (v.isTensor() && v.toTensor().defined()) {
      tensors.push_back(static_cast<int64_t>(i));
    } else if (v.isNone() || v.isTensor()) {
      nones.push_back(static_cast<int64_t>(i));
    } else if (v.isBool()) {
      a.add_int(key, v.toBool() ? 1 : 0);
      bools.push_back(static_cast<int64_t>(i));
    } else if (v.isInt() && c.info.is_dtype[i]) {
      a.add_string(key, dtype_string(static_cast<at::ScalarType>(v.toInt())));
      dtypes.push_back(static_cast<int64_t>(i));
    } else if (v.isInt() && c.info.is_enum[i]) {
      // a layout or memory format: an object a dispatch mode does not record
    } else if (v.isInt()) {
      a.add_int(key, v.toInt());
    } else if (v.isSymInt()) {
      a.add_int(key, v.toSymInt().expect_int());
    } else if (v.isDouble()) {
      a.add_float(key, v.toDouble());
    } else if (!v.isTensorList() && int_list(v, &list, &all_bool)) {
      a.add_ints(key, std::move(list));
      if (all_bool) bools.push_back(static_cast<int64_t>(i));
    }
  }
  a.add_ints("tensor_args", std::move(tensors));
  if (!nones.empty()) a.add_ints("none_args", std::move(nones));
  if (!bools.empty()) a.add_ints("bool_args", std::move(bools));
  if (!dtypes.empty()) a.add_ints("dtype_args", std::move(dtypes));
  if (!written.empty()) a.add_ints("written_args", written);
  return a;
}

// The DLTensor views of a record's tensors (borrowed: shapes, strides and
// names point into `t`) and the pointer and name arrays peat_op_record_t takes.
struct Views {
  std::vector<DLTensor> tensors;
  std::vector<const DLTensor*> pointers;
  std::vector<const char*> names;
};

bool views(const Tensors& t, Views* out, std::string* message) {
  out->tensors.resize(t.keep.size());
  for (size_t i = 0; i < t.keep.size(); ++i) {
    const at::Tensor& x = t.keep[i];
    DLTensor& d = out->tensors[i];
    d = DLTensor{};
    if (!dl_dtype(x.scalar_type(), &d.dtype)) {
      *message = "tensor '" + t.names[i] + "' has dtype " + c10::toString(x.scalar_type()) +
                 ", which has no DLPack mapping in peat";
      return false;
    }
    d.data = x.data_ptr();
    if (x.device().is_cpu()) {
      d.device = DLDevice{kDLCPU, 0};
    } else if (x.device().is_cuda()) {
      d.device = DLDevice{kDLCUDA, x.device().index()};
    } else if (x.device().is_hip()) {
      d.device = DLDevice{kDLROCM, x.device().index()};
    } else {
      *message = "tensor '" + t.names[i] + "' is on device " + x.device().str() + ", which peat cannot record";
      return false;
    }
    d.ndim = static_cast<int32_t>(x.dim());
    d.shape = const_cast<int64_t*>(x.sizes().data());
    d.strides = const_cast<int64_t*>(x.strides().data());
    out->pointers.push_back(&d);
    out->names.push_back(t.names[i].c_str());
  }
  return true;
}

}  // namespace

at::Tensor clone_layout(const at::Tensor& t) {
  if (t.is_view() || !t.is_contiguous()) {
    try {
      at::Tensor out = at::empty_strided(t.sizes(), t.strides(), t.options());
      out.copy_(t);
      return out;
    } catch (const c10::Error&) {  // overlapping (broadcast) strides
    }
  }
  return t.clone(at::MemoryFormat::Preserve);
}

std::vector<std::pair<size_t, at::Tensor>> copy_written(const OpInfo& info, c10::ArrayRef<c10::IValue> args) {
  std::vector<std::pair<size_t, at::Tensor>> out;
  for (size_t i : info.writes)
    if (i < args.size() && args[i].isTensor() && args[i].toTensor().defined())
      out.emplace_back(i, clone_layout(args[i].toTensor()));
  return out;
}

peat_status_t record_call(peat_profiler_t* profiler, uint32_t op, uint64_t call, peat_phase_t phase,
                          const char* module_path, const Call& c, bool record_inputs, int32_t* out_recorded,
                          bool* out_tensor_list, std::string* message) {
  *out_tensor_list = false;
  Tensors ins, outs;
  std::vector<int64_t> written;
  for (size_t i = 0; i < c.args.size(); ++i) {
    const c10::IValue& v = c.args[i];
    const std::string& name = c.info.names[i];
    if (v.isTensor() && v.toTensor().defined() && !wrapped_number(v)) {
      const at::Tensor& t = v.toTensor();
      if (t.is_sparse()) continue;
      const at::Tensor* as_read = &t;
      for (const auto& [pos, copy] : c.before)
        if (pos == i) {
          as_read = &copy;
          written.push_back(static_cast<int64_t>(i));
        }
      if (record_inputs) ins.add(name, *as_read);
    } else if (v.isTensorList() || v.isOptionalTensorList()) {
      *out_tensor_list = true;
      if (!record_inputs) continue;
      size_t j = 0;  // numbered among the tensors (None entries of a Tensor?[] skipped)
      for (const c10::IValue& e : v.toListRef())
        if (e.isTensor() && e.toTensor().defined()) ins.add(name + "." + std::to_string(j++), e.toTensor());
    }
  }
  add_results(c.info, c.results, &outs);
  for (int64_t w : written) outs.add(c.info.names[static_cast<size_t>(w)], c.args[static_cast<size_t>(w)].toTensor());
  ins.unique();
  outs.unique();
  Views in, out;
  if (!views(ins, &in, message) || !views(outs, &out, message)) return PEAT_STATUS_INVALID_ARGUMENT;
  const Attrs attrs = call_attrs(c, written);
  const std::vector<peat_attr_t> attr_views = attrs.view();
  peat_op_record_t rec;
  peat_op_record_init(&rec);
  rec.op = op;
  rec.call_index = call;
  rec.phase = phase;
  rec.module_path = module_path;
  rec.attrs = attr_views.data();
  rec.n_attrs = attr_views.size();
  rec.inputs = in.pointers.data();
  rec.input_names = in.names.data();
  rec.n_inputs = in.pointers.size();
  rec.outputs = out.pointers.data();
  rec.output_names = out.names.data();
  rec.n_outputs = out.pointers.size();
  const peat_status_t status = peat_profiler_record_op(profiler, &rec, out_recorded, nullptr);
  if (status != PEAT_STATUS_OK) *message = peat_last_error_message();
  return status;
}

}  // namespace peat_torch
