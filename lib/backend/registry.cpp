// The backend registry: the built-in CPU backend plus plugins found on disk.
// Plugins are opened RTLD_NOW | RTLD_LOCAL (unresolved symbols fail at open,
// not mid-run; their symbols never leak into the process) and are never
// closed, so tables and names they return stay valid for the process.
#include "lib/backend/backend.hpp"
#include "lib/backend/probe.hpp"

#include "lib/core/error.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

namespace peat::impl::backend {

namespace {

std::string library_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&cpu_backend_table), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code ec;
  auto path = std::filesystem::canonical(info.dli_fname, ec);
  if (ec) return std::filesystem::path(info.dli_fname).parent_path().string();
  return path.parent_path().string();
}

bool is_regular_file(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

Registry& Registry::instance() {
  static Registry registry;
  return registry;
}

Registry::Registry() {
  backends_.emplace("cpu", std::make_unique<peat_backend>(cpu_backend_table(), ""));
}

std::vector<std::string> Registry::search_path() const {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("PEAT_BACKEND_PATH")) {
    std::string_view rest(env);
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      const auto dir = rest.substr(0, colon);
      if (!dir.empty()) dirs.emplace_back(dir);
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  if (auto own = library_directory(); !own.empty()) dirs.push_back(own);
  return dirs;
}

std::unique_ptr<Backend> Registry::open_plugin(const std::string& path, std::string& reason) {
  // A plugin that crashes or hangs while loading must not take the host down:
  // it is loaded in a child process first (probe.hpp).
  reason = probe_plugin(path);
  if (!reason.empty()) return nullptr;
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    reason = fmt::format("cannot be opened: {}", why ? why : "unknown dlopen error");
    return nullptr;
  }
  auto entry = reinterpret_cast<peat_backend_get_api_fn>(::dlsym(handle, PEAT_BACKEND_ENTRY_POINT));
  if (entry == nullptr) {
    reason = fmt::format("does not export {}", PEAT_BACKEND_ENTRY_POINT);
    ::dlclose(handle);
    return nullptr;
  }
  const peat_backend_api_t* api = entry(PEAT_BACKEND_ABI_MAJOR);
  reason = validate_table(api, PEAT_BACKEND_ABI_MAJOR);
  if (!reason.empty()) {
    // The table may point into the plugin; it is refused, so nothing refers to it.
    ::dlclose(handle);
    return nullptr;
  }
  return std::make_unique<peat_backend>(api, path);
}

Backend& Registry::get(const std::string& name) {
  std::lock_guard lock(mutex_);
  if (auto it = backends_.find(name); it != backends_.end()) return *it->second;
  if (auto it = failures_.find(name); it != failures_.end())
    fail(PEAT_STATUS_UNAVAILABLE, "backend '{}' is unavailable: {}", name, it->second);
  if (name.find('/') != std::string::npos || name.empty())
    fail(PEAT_STATUS_INVALID_ARGUMENT, "backend name '{}' is not a plain name", name);

  const std::string file = fmt::format("libpeat-backend-{}.so", name);
  std::string tried;
  for (const auto& dir : search_path()) {
    const std::string path = dir + "/" + file;
    if (!is_regular_file(path)) continue;
    std::string reason;
    auto backend = open_plugin(path, reason);
    if (backend && backend->name() != name) {
      reason = fmt::format("its table names it '{}'", backend->name());
      backend.reset();
    }
    if (backend) return *backends_.emplace(name, std::move(backend)).first->second;
    tried += fmt::format("{}{} ({})", tried.empty() ? "" : "; ", path, reason);
  }
  std::string why = tried.empty() ? fmt::format("{} was not found in PEAT_BACKEND_PATH or next to libpeat", file)
                                  : fmt::format("every candidate was refused: {}", tried);
  failures_.emplace(name, why);
  fail(PEAT_STATUS_UNAVAILABLE, "backend '{}' is unavailable: {}", name, why);
}

Backend& Registry::load_file(const std::string& path) {
  if (!is_regular_file(path)) fail(PEAT_STATUS_NOT_FOUND, "plugin file '{}' does not exist", path);
  std::lock_guard lock(mutex_);
  for (auto& [name, backend] : backends_)
    if (backend->path() == path) return *backend;
  std::string reason;
  auto backend = open_plugin(path, reason);
  if (!backend) fail(PEAT_STATUS_UNAVAILABLE, "plugin '{}' is refused: {}", path, reason);
  const std::string name = backend->name();
  if (auto it = backends_.find(name); it != backends_.end())
    fail(PEAT_STATUS_INVALID_ARGUMENT, "plugin '{}' is named '{}', which is already loaded from '{}'", path, name,
         it->second->path().empty() ? std::string("libpeat (built in)") : it->second->path());
  failures_.erase(name);
  return *backends_.emplace(name, std::move(backend)).first->second;
}

Backend& Registry::for_device(int32_t device_type) {
  switch (device_type) {
    case kDLCPU: case kDLCUDAHost: case kDLROCMHost: return get("cpu");
    case kDLCUDA: case kDLCUDAManaged: return get("cuda");
    case kDLROCM: return get("hip");
    default: break;
  }
  {
    std::lock_guard lock(mutex_);
    for (auto& [name, backend] : backends_)
      if (backend->api().device_type == device_type) return *backend;
  }
  fail(PEAT_STATUS_UNSUPPORTED, "no loaded backend serves DLPack device type {}", device_type);
}

}  // namespace peat::impl::backend
