/*
 * peat/backend.h — the backend plugin ABI and the backend registry.
 *
 * A backend does the device side of PEAT: device enumeration, memory, copies,
 * asynchronous device-to-host staging for the profiler, the signature
 * (comparison) kernels, the injection kernels and kernel interception. The CPU
 * backend is built into libpeat; CUDA and HIP backends are plugins,
 * libpeat-backend-<name>.so, loaded at run time.
 *
 * Writing a plugin: export exactly one symbol,
 *
 *     const peat_backend_api_t* peat_backend_get_api(uint32_t abi_major);
 *
 * which returns a table that lives as long as the plugin is loaded (static
 * storage), or NULL when it cannot serve `abi_major`. The table is append-only:
 * new entries go at its end and abi_minor grows; a field is never moved or
 * removed without bumping PEAT_BACKEND_ABI_MAJOR. struct_size tells the loader
 * which entries a plugin built against an older header has.
 *
 * Plugin functions return peat_status_t; on failure they describe the problem
 * through their own last_error() entry, which the registry copies into the
 * caller's peat_last_error_message().
 */
#ifndef PEAT_BACKEND_H
#define PEAT_BACKEND_H

#include <peat/core.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PEAT_BACKEND_ABI_MAJOR 1
#define PEAT_BACKEND_ABI_MINOR 0

/* The name of the one symbol a plugin exports. */
#define PEAT_BACKEND_ENTRY_POINT "peat_backend_get_api"

/* Types of the analyzer and injector that the numeric entries take. They are
 * defined in peat/analyzer.h and peat/injector.h; a backend that implements
 * those entries includes those headers. */
struct peat_signature;
struct peat_signature_config;
struct peat_spatial_map;
struct peat_inject_spec;
struct peat_inject_truth;

/* What a backend reports about one device. */
typedef struct peat_backend_device_info_s {
  uint32_t struct_size;        /* sizeof(peat_backend_device_info_t), set by the caller */
  int32_t device_type;         /* DLDeviceType of the device */
  int32_t device_id;           /* index in [0, device_count) */
  char name[128];              /* e.g. "NVIDIA H100 80GB HBM3"; NUL-terminated */
  char vendor[64];             /* e.g. "NVIDIA", "AMD", "host"; NUL-terminated */
  uint64_t total_memory_bytes; /* device memory in bytes (host RAM for the CPU) */
  uint32_t compute_units;      /* SMs, CUs, or CPU hardware threads */
} peat_backend_device_info_t;

/* The function table of a backend. Entries marked [required] must be non-NULL
 * or the registry refuses the plugin; [optional] entries may be NULL and the
 * feature then reports PEAT_STATUS_UNSUPPORTED. `stream` arguments are the
 * backend's native stream (cudaStream_t, hipStream_t) or NULL for the default
 * stream; the CPU backend ignores them. */
typedef struct peat_backend_api {
  uint32_t struct_size; /* sizeof(peat_backend_api_t) the plugin was built with */
  uint32_t abi_major;   /* PEAT_BACKEND_ABI_MAJOR the plugin was built with */
  uint32_t abi_minor;   /* PEAT_BACKEND_ABI_MINOR the plugin was built with */
  const char* name;     /* [required] short name, e.g. "cpu", "cuda"; static storage */
  int32_t device_type;  /* DLDeviceType whose memory this backend serves */

  /* [required] Message of the last failed call of this backend on the calling
   * thread; static or thread-local storage, never NULL. */
  const char* (*last_error)(void);

  /* [required] Number of usable devices; 0 (and OK) when the driver is present
   * but no device is, UNAVAILABLE when the driver or runtime is missing. */
  peat_status_t (*device_count)(int32_t* out_count);
  /* [required] Fills *out (whose struct_size the caller set) for one device. */
  peat_status_t (*device_info)(int32_t device, peat_backend_device_info_t* out);

  /* [required] Device memory: allocate `bytes` (0 gives a unique non-NULL
   * pointer or NULL, both legal to free), free what alloc returned. */
  peat_status_t (*alloc)(int32_t device, size_t bytes, void** out_ptr);
  peat_status_t (*free)(int32_t device, void* ptr);
  /* [required] Copy `bytes` between any two of host / this backend's devices,
   * ordered on `stream`. */
  peat_status_t (*copy)(void* dst, DLDevice dst_device, const void* src, DLDevice src_device,
                        size_t bytes, void* stream);
  /* [required] Waits until all work on `stream` of `device` is done. */
  peat_status_t (*synchronize)(int32_t device, void* stream);

  /* [optional] Asynchronous device-to-host staging for the profiler: starts
   * copying `bytes` from the device pointer `src` into host memory `host_dst`
   * (pinned when the backend allocated it) and returns a ticket; stage_wait
   * blocks until that copy is complete and releases the ticket. */
  peat_status_t (*stage_to_host_async)(void* host_dst, const void* src, DLDevice src_device,
                                       size_t bytes, void* stream, void** out_ticket);
  peat_status_t (*stage_wait)(void* ticket);

  /* [optional] Signature of (golden, candidate), both on this backend's
   * devices, merged into *inout_signature (which the caller initialised);
   * fills *inout_map when it is not NULL. See peat/analyzer.h. The config is
   * read as by peat_analyze_accumulate (defaults, index_base, spatial view of
   * a piece). Synchronous: the result is on the host when the call returns;
   * the work runs on `stream`. Every backend gives the CPU backend's counts,
   * histograms, extrema and map for the same data (the conformance suite in
   * tests/gpu checks it). The CUDA and HIP plugins take contiguous tensors
   * (any byte_offset) on one device: strided ones -> UNSUPPORTED; tensors
   * of another device type -> UNSUPPORTED; shapes differ -> SHAPE_MISMATCH;
   * dtype not f16/bf16/f32/f64 -> UNSUPPORTED; a failed runtime call -> the
   * runtime's error mapped to a status, message from last_error(). On error
   * the outputs are unchanged. docs/gpu-backends.md describes the kernels. */
  peat_status_t (*signature_accumulate)(const DLTensor* golden, const DLTensor* candidate,
                                        const struct peat_signature_config* config,
                                        struct peat_signature* inout_signature,
                                        struct peat_spatial_map* inout_map, void* stream);

  /* [optional] Applies an error model to `tensor` in place, with the Philox
   * key (seed, op, call), and fills *out_truth when not NULL (its
   * struct_size set by the caller). See peat/injector.h. Every backend writes
   * the same bits and the same truth as the CPU backend for the same spec,
   * key and data. Synchronous; the work runs on `stream`. The CUDA and HIP
   * plugins take a contiguous tensor on their device (spec.stale likewise);
   * errors as peat_inject_apply, strided tensors -> UNSUPPORTED. */
  peat_status_t (*inject)(DLTensor* tensor, const struct peat_inject_spec* spec, uint64_t seed,
                          uint32_t op, uint32_t call, struct peat_inject_truth* out_truth,
                          void* stream);

  /* [optional] Installs / removes the backend's kernel interception (library
   * interposers, launch callbacks) for a session (a peat_session_t*). */
  peat_status_t (*intercept_install)(void* session);
  peat_status_t (*intercept_uninstall)(void* session);
} peat_backend_api_t;

/* The signature of the plugin entry point. */
typedef const peat_backend_api_t* (*peat_backend_get_api_fn)(uint32_t abi_major);

/* ------------------------------------------------------------- registry -- */

/* A loaded backend. Owned by the registry: never freed by the caller, valid
 * until the process exits (plugins are not unloaded, so pointers into them
 * stay valid). */
typedef struct peat_backend peat_backend_t;

/* Finds a backend by name. "cpu" is built in and always present. Any other
 * name N is loaded on first use from libpeat-backend-N.so, looked for in each
 * directory of the environment variable PEAT_BACKEND_PATH (colon-separated,
 * in order) and then in the directory that holds libpeat itself. A file that
 * cannot be opened, lacks the entry point, returns NULL, has another ABI
 * major, a struct_size smaller than the ABI 1.0 table, or a NULL [required]
 * entry is refused, and the search goes on with the next directory. Each
 * plugin is first opened and checked in a forked probe process, so one that
 * crashes (or hangs for 30 s) in its initialisers or entry point is refused
 * too, with the signal in the message, and the host survives; the environment
 * variable PEAT_BACKEND_PROBE=0 skips the probe. Loading
 * is attempted once per name; later calls return the same result.
 * Errors: NULL arguments -> INVALID_ARGUMENT; no usable plugin ->
 * UNAVAILABLE with a message listing every file tried and why it was refused.
 * Thread-safe. */
PEAT_API peat_status_t peat_backend_get(const char* name, peat_backend_t** out_backend);

/* Loads a plugin from an explicit file path, with the same checks as
 * peat_backend_get. A plugin whose name is already registered is refused
 * (INVALID_ARGUMENT) unless it is the same file. Errors: as peat_backend_get,
 * with NOT_FOUND for a missing file. Thread-safe. */
PEAT_API peat_status_t peat_backend_load_file(const char* path, peat_backend_t** out_backend);

/* Backend serving memory of a DLPack device type: kDLCPU, kDLCUDAHost and
 * kDLROCMHost -> "cpu", kDLCUDA and kDLCUDAManaged -> "cuda", kDLROCM -> "hip";
 * any already-loaded backend whose device_type matches otherwise.
 * Errors: UNAVAILABLE when that backend cannot be loaded; UNSUPPORTED for a
 * device type no backend serves. Thread-safe. */
PEAT_API peat_status_t peat_backend_for_device(int32_t device_type, peat_backend_t** out_backend);

/* The backend's name ("cpu", ...). Static storage; NULL only for a NULL
 * backend. Thread-safe. */
PEAT_API const char* peat_backend_name(const peat_backend_t* backend);

/* The backend's function table (for calling entries directly and for the
 * conformance tests). Never NULL for a valid backend. Thread-safe. */
PEAT_API const peat_backend_api_t* peat_backend_table(const peat_backend_t* backend);

/* Path of the shared object the backend was loaded from; "" for the built-in
 * CPU backend. Static storage owned by the registry. */
PEAT_API const char* peat_backend_path(const peat_backend_t* backend);

/* Number of usable devices of the backend (0 when the driver is present and
 * no device is). Errors: UNAVAILABLE when the driver is missing (message from
 * the plugin). Thread-safe. */
PEAT_API peat_status_t peat_backend_device_count(const peat_backend_t* backend, int32_t* out_count);

/* Describes one device. `out->struct_size` must be set by the caller (older,
 * smaller structs are accepted). Errors: device out of range ->
 * INVALID_ARGUMENT. Thread-safe. */
PEAT_API peat_status_t peat_backend_device_info(const peat_backend_t* backend, int32_t device,
                                                peat_backend_device_info_t* out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PEAT_BACKEND_H */
