// The backend table is an ABI shared with separately built plugins: its layout
// may only grow at the end. These assertions pin every field's offset on LP64
// targets so that an accidental reordering fails the build, not a user's run.
#include <peat/backend.h>

#include <cstddef>

#if defined(__LP64__)
static_assert(offsetof(peat_backend_api_t, struct_size) == 0);
static_assert(offsetof(peat_backend_api_t, abi_major) == 4);
static_assert(offsetof(peat_backend_api_t, abi_minor) == 8);
static_assert(offsetof(peat_backend_api_t, name) == 16);
static_assert(offsetof(peat_backend_api_t, device_type) == 24);
static_assert(offsetof(peat_backend_api_t, last_error) == 32);
static_assert(offsetof(peat_backend_api_t, device_count) == 40);
static_assert(offsetof(peat_backend_api_t, device_info) == 48);
static_assert(offsetof(peat_backend_api_t, alloc) == 56);
static_assert(offsetof(peat_backend_api_t, free) == 64);
static_assert(offsetof(peat_backend_api_t, copy) == 72);
static_assert(offsetof(peat_backend_api_t, synchronize) == 80);
static_assert(offsetof(peat_backend_api_t, stage_to_host_async) == 88);
static_assert(offsetof(peat_backend_api_t, stage_wait) == 96);
static_assert(offsetof(peat_backend_api_t, signature_accumulate) == 104);
static_assert(offsetof(peat_backend_api_t, inject) == 112);
static_assert(offsetof(peat_backend_api_t, intercept_install) == 120);
static_assert(offsetof(peat_backend_api_t, intercept_uninstall) == 128);
static_assert(sizeof(peat_backend_api_t) == 136, "ABI 1.0 table size; grow only by appending");

static_assert(offsetof(peat_backend_device_info_t, struct_size) == 0);
static_assert(offsetof(peat_backend_device_info_t, name) == 12);
static_assert(offsetof(peat_backend_device_info_t, vendor) == 140);
static_assert(offsetof(peat_backend_device_info_t, total_memory_bytes) == 208);
static_assert(offsetof(peat_backend_device_info_t, compute_units) == 216);
static_assert(sizeof(peat_backend_device_info_t) == 224);

#include <peat/session.h>
static_assert(offsetof(peat_session_options_t, backend) == 8);
static_assert(offsetof(peat_session_options_t, seed) == 24);
static_assert(offsetof(peat_session_options_t, run_name) == 40);
static_assert(sizeof(peat_session_options_t) == 48);
#endif
