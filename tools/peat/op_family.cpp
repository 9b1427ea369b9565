#include "tools/peat/op_family.hpp"

#include <peat/detector.h>

#include <algorithm>
#include <cctype>

namespace peat::cli {

std::string op_family(std::string_view name) {
  const std::string op(name);
  std::string out(peat_op_family(op.c_str(), nullptr, 0), '\0');
  peat_op_family(op.c_str(), out.data(), out.size() + 1);
  return out;
}

std::string normalise_layer(std::string_view layer) {
  std::string s(layer);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view p : {"model.", "module."})
    if (s.substr(0, p.size()) == p) {
      s.erase(0, p.size());
      break;
    }
  return s;
}

}  // namespace peat::cli
