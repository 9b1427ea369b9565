#include "peat_trainer/checkpoint.hpp"

#include <cstring>
#include <fstream>
#include <stdexcept>

namespace peat_trainer {

namespace {

constexpr char kMagic[8] = {'P', 'E', 'A', 'T', 'C', 'K', 'P', '1'};

template <typename T>
void put(std::ofstream& out, const T& v) {
  out.write(reinterpret_cast<const char*>(&v), sizeof(T));
}

template <typename T>
T get(std::ifstream& in, const std::string& path, const std::string& what) {
  T v;
  if (!in.read(reinterpret_cast<char*>(&v), sizeof(T))) throw std::runtime_error(path + ": truncated at " + what);
  return v;
}

}  // namespace

void save_checkpoint(const std::string& path, const std::map<std::string, const Tensor*>& tensors) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(path + ": cannot open for writing");
  out.write(kMagic, sizeof kMagic);
  put(out, static_cast<uint32_t>(tensors.size()));
  for (const auto& [name, t] : tensors) {
    put(out, static_cast<uint32_t>(name.size()));
    out.write(name.data(), static_cast<std::streamsize>(name.size()));
    put(out, static_cast<uint32_t>(t->shape.size()));
    for (int64_t d : t->shape) put(out, d);
    out.write(reinterpret_cast<const char*>(t->ptr()), static_cast<std::streamsize>(t->numel() * sizeof(float)));
  }
  if (!out.flush()) throw std::runtime_error(path + ": write failed");
}

std::map<std::string, Tensor> load_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<int64_t>(in.tellg());
  in.seekg(0);
  char magic[8];
  if (!in.read(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof magic) != 0) throw std::runtime_error(path + ": not a PEATCKP1 checkpoint");
  const auto count = get<uint32_t>(in, path, "tensor count");
  std::map<std::string, Tensor> out;
  for (uint32_t i = 0; i < count; ++i) {
    const std::string rec = "tensor " + std::to_string(i);
    const auto len = get<uint32_t>(in, path, rec + " name length");
    if (len > 4096) throw std::runtime_error(path + ": " + rec + ": name length " + std::to_string(len) + " too large");
    std::string name(len, '\0');
    if (!in.read(name.data(), len)) throw std::runtime_error(path + ": truncated at " + rec + " name");
    const auto rank = get<uint32_t>(in, path, rec + " rank");
    if (rank > 8) throw std::runtime_error(path + ": " + rec + " ('" + name + "'): rank " + std::to_string(rank) + " too large");
    Tensor t;
    int64_t numel = 1;
    for (uint32_t d = 0; d < rank; ++d) {
      const auto dim = get<int64_t>(in, path, rec + " dims");
      if (dim < 0 || (dim > 0 && numel > file_size / 4 / dim)) throw std::runtime_error(path + ": " + rec + " ('" + name + "'): bad dimension");
      t.shape.push_back(dim);
      numel *= dim;
    }
    if (numel * 4 > file_size - static_cast<int64_t>(in.tellg())) throw std::runtime_error(path + ": " + rec + " ('" + name + "'): data runs past the end of the file");
    t.data.resize(static_cast<size_t>(numel));
    if (!in.read(reinterpret_cast<char*>(t.ptr()), numel * 4)) throw std::runtime_error(path + ": truncated in " + rec + " data");
    out.insert_or_assign(std::move(name), std::move(t));
  }
  return out;
}

}  // namespace peat_trainer
