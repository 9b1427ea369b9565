// Helpers shared by the trace and profiler unit tests.
#pragma once

#include <peat/peat.h>

#include "lib/core/byte_buffer.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

namespace peat_test {

// A fresh directory under the system temp dir, removed with its contents at scope end.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("peat-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<unsigned char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Replaces the file by a new one (unlink first: truncating an existing file in
// place makes ext4 flush it to disk on close, which is slow).
inline void write_file(const std::string& path, const std::vector<unsigned char>& bytes) {
  ::unlink(path.c_str());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Deterministic bytes for tensors: random-looking but reproducible.
inline peat::impl::ByteBuffer pattern_bytes(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  peat::impl::ByteBuffer out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng() & 0xFF);
  return out;
}

// Whether two byte sequences (a tensor's ByteBuffer, a std::vector read back)
// hold the same bytes.
template <class A, class B>
bool same_bytes(const A& a, const B& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace peat_test
