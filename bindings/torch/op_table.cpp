#include "bindings/torch/op_table.hpp"

#include <algorithm>

namespace peat_torch {

size_t passed_positionals(const OpInfo& info, const c10::IValue* args) {
  size_t n = info.names.size();
  while (n > 0 && info.defaults[n - 1].has_value() && *info.defaults[n - 1] == args[n - 1]) --n;
  return n;
}

OpInfo op_info(const c10::FunctionSchema& schema, const peat_torch_op_spec_t& spec, uint32_t index) {
  OpInfo info;
  info.packet = spec.op;
  info.index = index;
  const auto& args = schema.arguments();
  info.n_arguments = args.size();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].kwarg_only()) continue;  // a dispatch mode sees these as keyword arguments, not positions
    info.names.push_back(args[i].name());
    auto type = args[i].real_type();  // type() says int for a ScalarType
    if (auto opt = type->cast<c10::OptionalType>()) type = opt->getElementType();
    info.defaults.push_back(args[i].default_value());
    info.is_dtype.push_back(type->kind() == c10::TypeKind::ScalarTypeType);
    info.is_enum.push_back(type->kind() == c10::TypeKind::LayoutType ||
                           type->kind() == c10::TypeKind::MemoryFormatType);
    const auto* alias = args[i].alias_info();
    if (alias != nullptr && alias->isWrite()) info.writes.push_back(info.names.size() - 1);
  }
  for (uint32_t i = 0; i < spec.n_extra_writes; ++i) {
    const int64_t w = spec.extra_writes[i];
    if (w >= 0 && static_cast<size_t>(w) < info.names.size()) info.writes.push_back(static_cast<size_t>(w));
  }
  std::sort(info.writes.begin(), info.writes.end());
  info.writes.erase(std::unique(info.writes.begin(), info.writes.end()), info.writes.end());
  const auto& rets = schema.returns();
  const bool table = spec.output_names != nullptr && spec.n_output_names == rets.size();
  for (size_t i = 0; i < rets.size(); ++i) {
    std::string name = rets[i].name();
    if (name.empty() && table && spec.output_names[i] != nullptr) name = spec.output_names[i];
    info.returns.push_back(std::move(name));
  }
  return info;
}

}  // namespace peat_torch
