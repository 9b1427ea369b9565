/* peat_torch.h — the native hook of peat.torch (libpeat_torch.so).
 *
 * What it is for. peat.torch's PeatMode is a Python TorchDispatchMode: torch
 * calls Python for every aten op while it is active, which costs a ResNet-18
 * training step about 10 % before PEAT does anything. This library does the
 * recording part of PeatMode in C++ instead: while a hook is attached, a
 * boxed kernel registered on torch's ADInplaceOrView dispatch key for the
 * chosen ops (below autograd, so forward and backward calls both pass, as
 * they do through a dispatch mode) names each call, decides with the
 * profiler's sampling rules whether to record it and records it; every other
 * op is not touched.
 *
 * Registration: the first hook that asks for an op registers its kernel with
 * torch's dispatcher for the rest of the process (torch does not support
 * removing a kernel while another thread may call the op). With no hook
 * attached, or a hook not handling that op, the kernel passes the call
 * straight on (a boxed call and a redispatch, for the registered ops only).
 * Registering races with calls of the same op on other threads: attach the
 * first hook before starting threads that run those ops.
 * peat.torch.NativeMode is the Python face of it (bindings/python/peat/
 * torch_native.py); a C++ trainer on libtorch can call it directly.
 *
 * What a record holds is what PeatMode records for the same call (the format
 * is defined by peat/torch_ops.py): op name "<module path>/aten::<op>", the
 * positional tensor arguments as the kernel read them (those the op writes to
 * copied before it runs), every output named by the schema or by the op
 * spec's output_names, then the written arguments as the op left them; the
 * attributes "arg<i>", "tensor_args", "none_args", "bool_args", "dtype_args",
 * "written_args"; the phase and the module path.
 *
 * Names and phases. Module paths come from the caller
 * (peat_torch_module_enter/exit around each module's forward). An op inside a
 * module is "forward" with the innermost path. An op the autograd engine runs
 * is "backward" and takes the path of the module whose forward created the
 * autograd node being run (matched by torch's sequence numbers). Any other op
 * takes the default phase and no path.
 *
 * Not covered: fault injection and candidates (PeatMode does those), ops
 * under torch.inference_mode (it skips the ADInplaceOrView key), ops whose
 * overload already has an ADInplaceOrView kernel (in-place and view ops, out=
 * overloads: their version-counter kernel stays), torch's _foreach_ ops
 * (autograd's fallback for them skips the key).
 *
 * Devices: CPU tensors, and CUDA tensors (staged by the profiler when
 * contiguous; a strided one through a host copy). A ROCm build of torch
 * reports its tensors as CUDA ones: they would be labelled kDLCUDA, so such a
 * build is not supported yet (peat.torch's PeatMode labels them kDLROCM).
 *
 * Threads: one hook at a time per process. Like a Python dispatch mode, the
 * hook sees the ops of the thread that attached it and those the autograd
 * engine runs (on any thread); other threads' ops pass untouched and
 * uncounted. Module enter/exit come from the attaching thread.
 *
 * Errors: functions return a peat_status_t; peat_torch_last_error() gives the
 * message of the last failure on the calling thread. A failure inside a
 * hooked op (the profiler could not record) is raised as a torch error
 * (c10::Error; RuntimeError in Python) naming the op and the call. */
#ifndef PEAT_TORCH_H
#define PEAT_TORCH_H

#include <peat/peat.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One aten op the hook handles, by overload packet name ("convolution": every
 * overload of it that has no ADInplaceOrView kernel of its own). */
typedef struct peat_torch_op_spec {
  uint32_t struct_size;              /* sizeof(peat_torch_op_spec_t) */
  const char* op;                    /* packet name without "aten::" */
  const char* const* output_names;   /* NULL, or names for the returns the schema leaves
                                        unnamed (used when as many as the returns) */
  uint32_t n_output_names;
  const int64_t* extra_writes;       /* positions of arguments the op writes to without an
                                        alias annotation (torch 1.13 native_batch_norm: 3, 4) */
  uint32_t n_extra_writes;
} peat_torch_op_spec_t;

typedef struct peat_torch_hook peat_torch_hook_t;

/* Counters of an attached hook. */
typedef struct peat_torch_hook_stats {
  uint32_t struct_size;     /* set by the caller: sizeof(peat_torch_hook_stats_t) */
  uint64_t ops_handled;     /* calls of the handled ops seen */
  uint64_t ops_recorded;    /* of those, queued by the profiler */
  uint64_t ops_unnamed_backward; /* backward calls whose module could not be found (no path) */
} peat_torch_hook_stats_t;

/* Attaches the hook: registers its kernel for `n_ops` ops (copied) and starts
 * naming and recording. `session` is required and must outlive the hook;
 * `profiler` may be NULL (the hook then only names and counts: the "attached
 * idle" state) and must outlive the hook too. record_inputs 0 records outputs
 * only. *out receives the hook.
 * Errors: NULL session/out/ops entry or a wrong struct_size -> INVALID_ARGUMENT;
 * an op name torch does not know -> NOT_FOUND; an op none of whose overloads
 * the hook can take (each has an ADInplaceOrView kernel) -> UNSUPPORTED; a
 * hook already attached in this process -> BAD_STATE. */
PEAT_API peat_status_t peat_torch_hook_attach(peat_session_t* session, peat_profiler_t* profiler,
                                              const peat_torch_op_spec_t* ops, uint64_t n_ops,
                                              int32_t record_inputs, peat_torch_hook_t** out);

/* Unregisters the kernels and frees the hook. NULL-safe. Waits for hooked
 * calls running on other threads to return first (so it must not be called
 * from inside a hooked op). */
PEAT_API void peat_torch_hook_detach(peat_torch_hook_t* hook);

/* The id of a module path ("layer1.0.conv1"), interned on first use; 0 is "".
 * Errors: NULL arguments -> INVALID_ARGUMENT. */
PEAT_API peat_status_t peat_torch_path_intern(peat_torch_hook_t* hook, const char* path, uint32_t* out_id);

/* A module's forward starts (path id from peat_torch_path_intern) / ends.
 * Unbalanced exits are ignored. peat_torch_module_reset empties the stack: a
 * forward that raised never reached its modules' exits (peat.torch calls it
 * when the root module's forward starts). */
PEAT_API void peat_torch_module_enter(peat_torch_hook_t* hook, uint32_t path_id);
PEAT_API void peat_torch_module_exit(peat_torch_hook_t* hook);
PEAT_API void peat_torch_module_reset(peat_torch_hook_t* hook);

/* The phase of handled ops outside any module and outside backward
 * (PEAT_PHASE_FORWARD by default; a trainer sets PEAT_PHASE_OPTIMIZER around
 * its optimizer step). Errors: a phase out of range -> INVALID_ARGUMENT. */
PEAT_API peat_status_t peat_torch_set_default_phase(peat_torch_hook_t* hook, peat_phase_t phase);

/* Counters (see peat_torch_hook_stats_t). Errors: NULL or small struct_size
 * -> INVALID_ARGUMENT. */
PEAT_API peat_status_t peat_torch_hook_stats(const peat_torch_hook_t* hook, peat_torch_hook_stats_t* out);

/* The libtorch version this library was built against ("1.13.0"). It runs
 * only in a process whose torch is that libtorch (the same major.minor);
 * peat.torch checks before it attaches. */
PEAT_API const char* peat_torch_torch_version(void);

/* The message of the last failed call on this thread ("" when none). Valid
 * until the next call on this thread. */
PEAT_API const char* peat_torch_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* PEAT_TORCH_H */
