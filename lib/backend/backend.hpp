// peat::impl::backend::Backend wraps one backend's function table (built-in CPU or a plugin);
// peat::impl::backend::Registry finds, loads, checks and keeps backends for the process.
#pragma once

#include <peat/backend.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <cstddef>

// True when `backend` (a peat::impl::backend::Backend) has the table entry `field` set.
#define PEAT_BACKEND_HAS(backend, field)                                                     \
  ((backend).covers(offsetof(peat_backend_api_t, field) + sizeof(peat_backend_api_t::field)) && \
   (backend).api().field != nullptr)

namespace peat::impl::backend {

class Backend {
 public:
  Backend(const peat_backend_api_t* api, std::string path) : api_(api), path_(std::move(path)) {}

  const peat_backend_api_t& api() const noexcept { return *api_; }
  const char* name() const noexcept { return api_->name; }
  const std::string& path() const noexcept { return path_; }

  // Throws peat::impl::Error carrying the plugin's own message when `status` is not OK.
  void check(peat_status_t status, std::string_view what) const;

  int32_t device_count() const;
  peat_backend_device_info_t device_info(int32_t device) const;

  // Whether the plugin's table (its struct_size) reaches `end_offset` bytes;
  // use PEAT_BACKEND_HAS to test for an [optional] entry.
  bool covers(std::size_t end_offset) const noexcept { return end_offset <= api_->struct_size; }

 private:
  const peat_backend_api_t* api_;
  std::string path_;
};

// Checks a table returned by a plugin's entry point; returns "" when usable, or
// the reason it is refused.
std::string validate_table(const peat_backend_api_t* api, uint32_t abi_major);

class Registry {
 public:
  static Registry& instance();

  Backend& get(const std::string& name);             // throws UNAVAILABLE
  Backend& load_file(const std::string& path);       // throws NOT_FOUND / UNAVAILABLE / INVALID_ARGUMENT
  Backend& for_device(int32_t device_type);          // throws UNAVAILABLE / UNSUPPORTED

  // Directories searched for libpeat-backend-<name>.so, in order.
  std::vector<std::string> search_path() const;

 private:
  Registry();
  // Opens and checks one plugin file; returns nullptr and sets `reason` on refusal.
  std::unique_ptr<Backend> open_plugin(const std::string& path, std::string& reason);

  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Backend>, std::less<>> backends_;  // by name
  std::map<std::string, std::string, std::less<>> failures_;              // name -> why
};

// The built-in CPU backend's table (lib/backend/cpu/).
const peat_backend_api_t* cpu_backend_table() noexcept;


}  // namespace peat::impl::backend

struct peat_backend : peat::impl::backend::Backend {
  using peat::impl::backend::Backend::Backend;
};
