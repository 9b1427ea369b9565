// checkpoint.hpp — named parameter tensors to and from a file.
//
// Format (little-endian): "PEATCKP1", u32 count, then per tensor: u32 name
// length, name bytes, u32 rank, rank x i64 dims, numel x f32 data.
#pragma once

#include "tensor.hpp"

#include <map>
#include <string>

namespace peat_trainer {

void save_checkpoint(const std::string& path, const std::map<std::string, const Tensor*>& tensors);
// Throws std::runtime_error naming the file and the offending record on a bad file.
std::map<std::string, Tensor> load_checkpoint(const std::string& path);

}  // namespace peat_trainer
