"""ctypes mirror of PEAT's C ABI: library lookup, the public structs, and the
prototypes of the exported functions.

Nothing here is Pythonic; the classes in the other modules wrap it. Every
struct mirrors its C declaration field by field (include/peat/*.h); the struct
sizes are checked against the library at load time wherever the library
reports them (the *_init functions write struct_size).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_int,
                    c_int32, c_int64, c_size_t, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p)
from pathlib import Path

#: Version this package was written against (PEAT_VERSION_NUMBER / PEAT_ABI_VERSION).
EXPECTED_VERSION_NUMBER = 200
EXPECTED_ABI_VERSION = 0

# ------------------------------------------------------------------ DLPack --
kDLCPU, kDLCUDA, kDLCUDAHost, kDLROCM, kDLROCMHost = 1, 2, 3, 10, 11
kDLInt, kDLUInt, kDLFloat, kDLBfloat = 0, 1, 2, 4


class DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32),
                ("dtype", DLDataType), ("shape", POINTER(c_int64)),
                ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class DLManagedTensor(Structure):
    pass


DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p),
                            ("deleter", CFUNCTYPE(None, POINTER(DLManagedTensor)))]

# ----------------------------------------------------------------- session --


class BackendDeviceInfo(Structure):
    _fields_ = [("struct_size", c_uint32), ("device_type", c_int32), ("device_id", c_int32),
                ("name", c_char * 128), ("vendor", c_char * 64),
                ("total_memory_bytes", c_uint64), ("compute_units", c_uint32)]


class SessionOptions(Structure):
    _fields_ = [("struct_size", c_uint32), ("backend", c_char_p), ("rank", c_int32),
                ("world_size", c_int32), ("seed", c_uint64), ("max_ops", c_uint32),
                ("max_log_entries", c_uint32), ("run_name", c_char_p)]

# ---------------------------------------------------------------- analyzer --
ULP_BUCKETS, REL_BUCKETS, XOR_BITS, POPCOUNT_BUCKETS = 66, 68, 64, 65


EXACT_SUM_DIGITS = 68


class ExactSum(Structure):
    """peat_exact_sum_t: an exact fixed-point sum; read it with peat_exact_sum_value."""
    _fields_ = [("digits", c_uint32 * EXACT_SUM_DIGITS), ("nonfinite", c_uint32), ("reserved", c_uint32)]


class Signature(Structure):
    _fields_ = [("struct_size", c_uint32), ("flags", c_uint32),
                ("golden_dtype", DLDataType), ("candidate_dtype", DLDataType),
                ("rtol", c_double), ("atol", c_double), ("reduction_length", c_int64),
                ("unit_roundoff", c_double),
                ("count", c_uint64), ("bitwise_mismatch_count", c_uint64),
                ("value_mismatch_count", c_uint64), ("golden_nan_count", c_uint64),
                ("golden_inf_count", c_uint64), ("candidate_nan_count", c_uint64),
                ("candidate_inf_count", c_uint64), ("new_nonfinite_count", c_uint64),
                ("lost_nonfinite_count", c_uint64), ("sign_flip_count", c_uint64),
                ("dropped_count", c_uint64), ("spurious_count", c_uint64),
                ("tolerance_fail_count", c_uint64), ("finite_count", c_uint64),
                ("max_abs_error", c_double), ("max_abs_error_index", c_int64),
                ("max_abs_error_golden", c_double), ("max_abs_error_candidate", c_double),
                ("max_rel_error", c_double), ("max_rel_error_index", c_int64),
                ("max_abs_golden", c_double),
                ("sum_error", ExactSum), ("sum_abs_error", ExactSum), ("sum_sq_error", ExactSum),
                ("sum_sq_golden", ExactSum), ("sum_sq_candidate", ExactSum),
                ("sum_golden_candidate", ExactSum),
                ("ratio_count", c_uint64), ("ratio_dev_sum", ExactSum), ("ratio_dev_sq_sum", ExactSum),
                ("ratio_min", c_double), ("ratio_max", c_double),
                ("ulp_hist", c_uint64 * ULP_BUCKETS), ("rel_hist", c_uint64 * REL_BUCKETS),
                ("xor_bit_hist", c_uint64 * XOR_BITS),
                ("xor_popcount_hist", c_uint64 * POPCOUNT_BUCKETS),
                ("xor_top_bit_hist", c_uint64 * XOR_BITS),
                ("xor_top_bit_set_hist", c_uint64 * XOR_BITS)]


class SignatureSums(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_uint32),
                ("sum_error", c_double), ("sum_abs_error", c_double), ("sum_sq_error", c_double),
                ("sum_sq_golden", c_double), ("sum_sq_candidate", c_double),
                ("sum_golden_candidate", c_double), ("ratio_mean", c_double), ("ratio_m2", c_double)]


class SignatureConfig(Structure):
    _fields_ = [("struct_size", c_uint32), ("rtol", c_double), ("atol", c_double),
                ("reduction_length", c_int64), ("unit_roundoff", c_double),
                ("ratio_min_abs", c_double), ("index_base", c_int64),
                ("spatial_rows", c_int64), ("spatial_cols", c_int64),
                ("tile_rows", c_int64), ("tile_cols", c_int64),
                ("map_mismatch", c_int32), ("num_threads", c_int32)]


class SpatialMap(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_uint32), ("rows", c_int64),
                ("cols", c_int64), ("tile_rows", c_int64), ("tile_cols", c_int64),
                ("tile_grid_rows", c_int64), ("tile_grid_cols", c_int64),
                ("row_counts", POINTER(c_uint64)), ("row_capacity", c_size_t),
                ("col_counts", POINTER(c_uint64)), ("col_capacity", c_size_t),
                ("tile_counts", POINTER(c_uint64)), ("tile_capacity", c_size_t),
                ("lane32_counts", c_uint64 * 32), ("lane64_counts", c_uint64 * 64),
                ("mismatch_count", c_uint64), ("first_mismatch", c_int64),
                ("last_mismatch", c_int64), ("longest_run", c_int64),
                ("longest_run_start", c_int64), ("covered_begin", c_int64),
                ("covered_end", c_int64), ("leading_run", c_int64), ("trailing_run", c_int64),
                ("owned", c_void_p)]


class BackendApi(Structure):
    """peat_backend_api_t (peat/backend.h), field by field. Python calls only
    last_error and signature_accumulate (the device signature, which
    peat_analyze leaves to the backend); the other entries are kept as
    untyped pointers."""
    _fields_ = [("struct_size", c_uint32), ("abi_major", c_uint32), ("abi_minor", c_uint32),
                ("name", c_char_p), ("device_type", c_int32),
                ("last_error", CFUNCTYPE(c_char_p)),
                ("device_count", c_void_p), ("device_info", c_void_p),
                ("alloc", c_void_p), ("free", c_void_p), ("copy", c_void_p),
                ("synchronize", c_void_p), ("stage_to_host_async", c_void_p),
                ("stage_wait", c_void_p),
                ("signature_accumulate", CFUNCTYPE(c_int32, POINTER(DLTensor), POINTER(DLTensor),
                                                   POINTER(SignatureConfig), POINTER(Signature),
                                                   POINTER(SpatialMap), c_void_p)),
                ("inject", c_void_p), ("intercept_install", c_void_p),
                ("intercept_uninstall", c_void_p)]


class AggregatorOptions(Structure):
    _fields_ = [("struct_size", c_uint32), ("max_ops", c_uint32), ("series_capacity", c_uint32)]


class SeriesPoint(Structure):
    _fields_ = [("step", c_int64), ("call", c_uint64), ("count", c_uint64),
                ("tolerance_fail_count", c_uint64), ("nonfinite_count", c_uint64),
                ("max_abs_error", c_double), ("max_rel_error", c_double),
                ("relative_l2", c_double)]


class LossCompareOptions(Structure):
    _fields_ = [("struct_size", c_uint32), ("band_abs", c_double), ("band_rel", c_double),
                ("window", c_int32), ("patience", c_int32)]


class LossComparison(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_uint32), ("steps", c_int64),
                ("final_golden", c_double), ("final_candidate", c_double),
                ("final_delta", c_double), ("max_divergence", c_double),
                ("max_divergence_step", c_int64), ("first_beyond_step", c_int64),
                ("beyond_count", c_int64)]


class NoiseBandOptions(Structure):
    _fields_ = [("struct_size", c_uint32), ("window", c_int32), ("widen", c_double),
                ("patience", c_int32), ("reserved", c_int32)]


class NoiseBandInfo(Structure):
    _fields_ = [("struct_size", c_uint32), ("reruns", c_uint32), ("length", c_int64),
                ("window", c_int32), ("patience", c_int32), ("factor", c_double),
                ("max_deviation", c_double), ("band", c_double), ("max_param_drift", c_double)]


class Impact(Structure):
    _fields_ = [("struct_size", c_uint32), ("verdict", c_int32), ("steps", c_int64),
                ("effect", c_double), ("max_deviation", c_double),
                ("max_deviation_step", c_int64), ("first_beyond_step", c_int64),
                ("beyond_count", c_int64), ("final_delta", c_double), ("param_drift", c_double),
                ("param_drift_ratio", c_double)]


class NamedTensor(Structure):
    _fields_ = [("name", c_char_p), ("tensor", POINTER(DLTensor))]


class TensorDrift(Structure):
    _fields_ = [("name", c_char_p), ("status", c_int32), ("reserved", c_int32)]

# ------------------------------------------------------------------- trace --


class Attr(Structure):
    _fields_ = [("key", c_char_p), ("type", c_int32), ("reserved", c_int32), ("i", c_int64),
                ("f", c_double), ("s", c_char_p), ("ints", POINTER(c_int64)),
                ("n_ints", c_uint64)]


class TraceReaderOptions(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_uint32),
                ("max_tensor_bytes", c_uint64), ("max_meta_bytes", c_uint64),
                ("max_record_bytes", c_uint64)]


class TraceRecovery(Structure):
    _fields_ = [("struct_size", c_uint32), ("complete", c_int32), ("records", c_uint64),
                ("valid_bytes", c_uint64), ("file_bytes", c_uint64),
                ("stop_reason", c_char * 256)]


class TraceRunInfo(Structure):
    _fields_ = [("struct_size", c_uint32), ("format_major", c_uint16),
                ("format_minor", c_uint16), ("framework", c_char_p), ("device", c_char_p),
                ("vendor", c_char_p), ("library_version", c_char_p), ("run_name", c_char_p),
                ("rank", c_int32), ("world_size", c_int32), ("created_unix_ns", c_uint64),
                ("n_tags", c_uint64)]


class TraceRecordInfo(Structure):
    _fields_ = [("struct_size", c_uint32), ("kind", c_int32), ("file_offset", c_uint64),
                ("file_bytes", c_uint64), ("step", c_int64), ("name", c_char_p),
                ("phase", c_int32), ("reserved", c_int32), ("module_path", c_char_p),
                ("call_index", c_uint64), ("n_attrs", c_uint64), ("n_inputs", c_uint64),
                ("n_outputs", c_uint64), ("n_tensors", c_uint64), ("value", c_double),
                ("unix_ns", c_uint64)]


class TraceFilter(Structure):
    _fields_ = [("struct_size", c_uint32), ("kinds", c_uint32), ("op_glob", c_char_p),
                ("step_min", c_int64), ("step_max", c_int64), ("phase", c_int32),
                ("reserved", c_int32)]


class TraceTensorInfo(Structure):
    _fields_ = [("struct_size", c_uint32), ("ndim", c_int32), ("name", c_char_p),
                ("dtype", DLDataType), ("device", DLDevice), ("shape", POINTER(c_int64)),
                ("numel", c_int64), ("raw_bytes", c_uint64), ("encoded_bytes", c_uint64),
                ("codec", c_int32), ("reserved", c_int32), ("checksum", c_uint64),
                ("strides", POINTER(c_int64)), ("storage_offset", c_int64),
                ("is_reference", c_int32), ("ref_slot", c_int32), ("ref_seq", c_uint64),
                ("ref_tensor", c_uint64)]

# ---------------------------------------------------------------- profiler --


class ProfilerTag(Structure):
    _fields_ = [("key", c_char_p), ("value", c_char_p)]


class ProfilerOptions(Structure):
    _fields_ = [("struct_size", c_uint32), ("codec", c_int32), ("path", c_char_p),
                ("framework", c_char_p), ("device", c_char_p), ("vendor", c_char_p),
                ("tags", POINTER(ProfilerTag)), ("n_tags", c_uint32), ("zstd_level", c_int32),
                ("queue_bytes", c_uint64), ("full_queue_policy", c_int32),
                ("default_record", c_int32), ("byte_budget", c_uint64),
                ("content_index_entries", c_uint64)]


class SampleRule(Structure):
    _fields_ = [("struct_size", c_uint32), ("record", c_int32), ("op_glob", c_char_p),
                ("every_n", c_uint64), ("first_k", c_uint64), ("step_begin", c_int64),
                ("step_end", c_int64), ("count_by", c_int32), ("reserved", c_int32)]


class OpRecord(Structure):
    _fields_ = [("struct_size", c_uint32), ("op", c_uint32), ("call_index", c_uint64),
                ("step", c_int64), ("phase", c_int32), ("force", c_int32),
                ("module_path", c_char_p), ("attrs", POINTER(Attr)), ("n_attrs", c_uint64),
                ("inputs", POINTER(POINTER(DLTensor))), ("input_names", POINTER(c_char_p)),
                ("n_inputs", c_uint64), ("outputs", POINTER(POINTER(DLTensor))),
                ("output_names", POINTER(c_char_p)), ("n_outputs", c_uint64),
                ("stream", c_void_p)]


class ProfilerStats(Structure):
    _fields_ = [("struct_size", c_uint32), ("error", c_int32), ("records_written", c_uint64),
                ("records_pending", c_uint64), ("not_sampled", c_uint64),
                ("dropped_queue_full", c_uint64), ("dropped_budget", c_uint64),
                ("dropped_error", c_uint64), ("raw_bytes", c_uint64), ("file_bytes", c_uint64),
                ("queue_bytes", c_uint64)]

# ---------------------------------------------------------------- injector --
TRUTH_CAPACITY = 64


class InjectSpec(Structure):
    _fields_ = [("struct_size", c_uint32), ("kind", c_int32), ("count", c_int64),
                ("elements", POINTER(c_int64)), ("probability", c_double), ("bits", c_int32),
                ("bit", c_int32), ("adjacent", c_int32), ("field", c_int32),
                ("stuck_value", c_int32), ("scope", c_int32), ("lane_period", c_int32),
                ("lane", c_int32), ("value_kind", c_int32), ("value", c_double),
                ("range", c_double), ("rows", c_int64), ("cols", c_int64), ("region", c_int32),
                ("first", c_int64), ("extent", c_int64), ("tile_rows", c_int64),
                ("tile_cols", c_int64), ("fill", c_int32), ("stale", POINTER(DLTensor)),
                ("alpha", c_double), ("offset", c_int64), ("format", c_int32),
                ("rounding", c_int32), ("saturate", c_int32), ("ulp", c_int32),
                ("distribution", c_int32)]


class InjectChange(Structure):
    _fields_ = [("index", c_int64), ("old_bits", c_uint64), ("new_bits", c_uint64),
                ("old_value", c_double), ("new_value", c_double)]


class InjectTruth(Structure):
    _fields_ = [("struct_size", c_uint32), ("kind", c_int32), ("model", c_int32),
                ("element_bits", c_int32), ("numel", c_int64), ("selected", c_int64),
                ("changed", c_int64), ("new_nonfinite", c_int64), ("first_index", c_int64),
                ("last_index", c_int64), ("rows", c_int64), ("cols", c_int64),
                ("row_min", c_int64), ("row_max", c_int64), ("col_min", c_int64),
                ("col_max", c_int64), ("bit_flips", c_uint64 * 64), ("seed", c_uint64),
                ("op", c_uint32), ("call", c_uint32), ("recorded", c_int64),
                ("changes", InjectChange * TRUTH_CAPACITY)]


class InjectorOptions(Structure):
    _fields_ = [("struct_size", c_uint32), ("max_firings_logged", c_uint32)]


class InjectorPolicy(Structure):
    _fields_ = [("struct_size", c_uint32), ("op_pattern", c_char_p), ("action", c_int32),
                ("every_n", c_uint64), ("phase_offset", c_uint64), ("probability", c_double),
                ("step_begin", c_int64), ("step_end", c_int64), ("first_calls", c_uint64),
                ("max_firings", c_uint64), ("phase_mask", c_uint32),
                ("spec", POINTER(InjectSpec)), ("output_index", c_int32)]


class Firing(Structure):
    _fields_ = [("struct_size", c_uint32), ("op", c_uint32), ("call", c_uint64),
                ("step", c_int64), ("phase", c_int32), ("action", c_int32), ("policy", c_int32),
                ("status", c_int32), ("kept_golden", c_int32), ("compared", c_int32),
                ("elements", c_int64), ("mismatches", c_int64), ("new_nonfinite", c_int64),
                ("max_abs_error", c_double), ("max_rel_error", c_double),
                ("rms_error", c_double), ("injected", c_int64)]


# ---------------------------------------------------------------- detector --
DETECT_MAX_VERDICTS, DETECT_EVIDENCE_LINES, DETECT_EVIDENCE_CHARS = 8, 4, 192


class DetectContext(Structure):
    _fields_ = [("struct_size", c_uint32), ("op_kind", c_int32), ("reduction_length", c_int64),
                ("golden_dtype", DLDataType), ("candidate_dtype", DLDataType),
                ("unit_roundoff", c_double), ("rounding_slack", c_double),
                ("map", POINTER(SpatialMap)), ("rerun", POINTER(Signature)),
                ("reference", POINTER(Signature)), ("rerun_diff", POINTER(Signature))]


class Verdict(Structure):
    _fields_ = [("model", c_int32), ("evidence_count", c_int32), ("confidence", c_double),
                ("bit", c_int32), ("polarity", c_int32), ("lane_period", c_int32),
                ("lane", c_int32), ("effective_mantissa_bits", c_double),
                ("nearest_format", c_int32), ("reserved", c_int32), ("alpha", c_double),
                ("rows_affected", c_int64), ("cols_affected", c_int64),
                ("tiles_affected", c_int64), ("elements", c_int64), ("first_index", c_int64),
                ("evidence", (c_char * DETECT_EVIDENCE_CHARS) * DETECT_EVIDENCE_LINES)]


class Detection(Structure):
    _fields_ = [("struct_size", c_uint32), ("verdict_count", c_int32), ("elements", c_uint64),
                ("mismatches", c_uint64), ("verdicts", Verdict * DETECT_MAX_VERDICTS)]

# ---------------------------------------------------------------- playback --


class PlaybackAttrs(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_uint32), ("attrs", POINTER(Attr)),
                ("n_attrs", c_uint64), ("op", c_char_p), ("module_path", c_char_p),
                ("step", c_int64), ("call_index", c_uint64), ("phase", c_int32),
                ("run", c_int32)]


PROGRESS_FN = CFUNCTYPE(c_int32, c_void_p, c_uint64, c_uint64)


class PlaybackOptions(Structure):
    _fields_ = [("struct_size", c_uint32), ("thread_safe", c_int32), ("run_twice", c_int32),
                ("attrs_mode", c_int32), ("filter", POINTER(TraceFilter)),
                ("config", POINTER(SignatureConfig)), ("max_in_flight", c_uint32),
                ("num_threads", c_int32), ("progress", PROGRESS_FN),
                ("progress_user", c_void_p), ("isolate", c_int32), ("timeout_ms", c_uint32),
                ("partition_rank", c_uint32), ("partition_world", c_uint32)]


class ReportOptions(Structure):
    _fields_ = [("struct_size", c_uint32), ("max_table_rows", c_uint32), ("title", c_char_p)]


class ReportFiRun(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_uint32), ("candidate", c_char_p),
                ("label", c_char_p), ("stage", c_char_p), ("every", c_uint64),
                ("candidate_calls", c_int64), ("loss", POINTER(c_double)), ("length", c_size_t),
                ("steps", POINTER(c_int64)), ("impact", POINTER(Impact)),
                ("param_drift", c_double), ("test_accuracy", c_double)]


class PlaybackSummary(Structure):
    _fields_ = [("struct_size", c_uint32), ("cancelled", c_int32), ("selected", c_uint64),
                ("done", c_uint64), ("ok", c_uint64), ("failed", c_uint64),
                ("exact", c_uint64), ("mismatched", c_uint64),
                ("nondeterministic", c_uint64)]


class PlaybackResult(Structure):
    _fields_ = [("struct_size", c_uint32), ("status", c_int32), ("record", c_uint64),
                ("op", c_char_p), ("module_path", c_char_p), ("step", c_int64),
                ("call_index", c_uint64), ("phase", c_int32), ("deterministic", c_int32),
                ("n_outputs", c_uint64), ("elements", c_uint64),
                ("bitwise_mismatches", c_uint64), ("tolerance_failures", c_uint64),
                ("message", c_char_p)]


class PlaybackGroup(Structure):
    _fields_ = [("struct_size", c_uint32), ("kind", c_int32), ("name", c_char_p),
                ("records", c_uint64), ("ok", c_uint64), ("failed", c_uint64),
                ("exact", c_uint64), ("nondeterministic", c_uint64), ("n_outputs", c_uint64)]


PLAYBACK_MODEL_SLOTS = 16


class PlaybackVerdicts(Structure):
    _fields_ = [("struct_size", c_uint32), ("top_model", c_int32), ("records", c_uint64),
                ("judged", c_uint64), ("counts", c_uint64 * PLAYBACK_MODEL_SLOTS),
                ("bits", c_uint64)]


KERNEL_FN = CFUNCTYPE(c_int32, c_void_p, POINTER(DLTensor), c_int32, POINTER(DLTensor), c_int32,
                      c_void_p)

# ------------------------------------------------------------- prototypes --
S = c_int32  # peat_status_t
P = POINTER
_PROTOTYPES = {
    # core.h
    "peat_version_number": (c_uint32, []),
    "peat_version_string": (c_char_p, []),
    "peat_abi_version": (c_uint32, []),
    "peat_status_string": (c_char_p, [S]),
    "peat_last_error_message": (c_char_p, []),
    "peat_clear_last_error": (None, []),
    "peat_dtype_from_name": (S, [c_char_p, P(DLDataType)]),
    "peat_dtype_name": (c_char_p, [DLDataType]),
    "peat_dtype_size": (c_size_t, [DLDataType]),
    "peat_dtype_is_supported_float": (c_int, [DLDataType]),
    "peat_dtype_mantissa_bits": (S, [DLDataType, P(c_int32), P(c_double)]),
    "peat_tensor_numel": (S, [P(DLTensor), P(c_int64)]),
    # session.h
    "peat_session_options_init": (None, [P(SessionOptions)]),
    "peat_session_create": (S, [P(SessionOptions), P(c_void_p)]),
    "peat_session_destroy": (None, [c_void_p]),
    "peat_session_intern_op": (S, [c_void_p, c_char_p, P(c_uint32)]),
    "peat_session_op_name": (S, [c_void_p, c_uint32, P(c_char_p)]),
    "peat_session_op_count": (S, [c_void_p, P(c_uint32)]),
    "peat_session_next_call": (S, [c_void_p, c_uint32, P(c_uint64)]),
    "peat_session_call_count": (S, [c_void_p, c_uint32, P(c_uint64)]),
    "peat_session_set_step": (S, [c_void_p, c_int64]),
    "peat_session_step": (S, [c_void_p, P(c_int64)]),
    "peat_session_set_phase": (S, [c_void_p, c_int32]),
    "peat_session_phase": (S, [c_void_p, P(c_int32)]),
    "peat_session_backend": (S, [c_void_p, P(c_void_p)]),
    "peat_session_seed": (S, [c_void_p, P(c_uint64)]),
    "peat_session_log": (S, [c_void_p, c_int32, c_char_p]),
    "peat_session_log_count": (S, [c_void_p, P(c_uint64), P(c_uint64)]),
    "peat_session_log_entry": (S, [c_void_p, c_uint64, P(c_int32), c_char_p, c_size_t,
                                   P(c_size_t)]),
    "peat_backend_name": (c_char_p, [c_void_p]),
    "peat_backend_get": (S, [c_char_p, P(c_void_p)]),
    "peat_backend_load_file": (S, [c_char_p, P(c_void_p)]),
    "peat_backend_for_device": (S, [c_int32, P(c_void_p)]),
    "peat_backend_path": (c_char_p, [c_void_p]),
    "peat_backend_device_count": (S, [c_void_p, P(c_int32)]),
    "peat_backend_device_info": (S, [c_void_p, c_int32, P(BackendDeviceInfo)]),
    "peat_backend_table": (P(BackendApi), [c_void_p]),
    # analyzer.h
    "peat_signature_init": (None, [P(Signature)]),
    "peat_signature_config_init": (None, [P(SignatureConfig)]),
    "peat_spatial_map_init": (None, [P(SpatialMap)]),
    "peat_spatial_map_release": (None, [P(SpatialMap)]),
    "peat_default_tolerance": (S, [DLDataType, P(c_double), P(c_double)]),
    "peat_analyze": (S, [P(DLTensor), P(DLTensor), P(SignatureConfig), P(Signature),
                         P(SpatialMap)]),
    "peat_analyze_accumulate": (S, [P(DLTensor), P(DLTensor), P(SignatureConfig), P(Signature),
                                    P(SpatialMap)]),
    "peat_signature_merge": (S, [P(Signature), P(Signature)]),
    "peat_spatial_map_shape": (S, [P(DLTensor), P(SignatureConfig), P(c_int64), P(c_int64),
                                   P(c_int64)]),
    "peat_spatial_map_merge": (S, [P(SpatialMap), P(SpatialMap)]),
    "peat_compare_checkpoints": (S, [P(NamedTensor), c_size_t, P(NamedTensor), c_size_t,
                                     P(SignatureConfig), P(TensorDrift), P(Signature), c_size_t,
                                     P(c_size_t)]),
    "peat_exact_sum_value": (S, [P(ExactSum), P(c_double)]),
    "peat_exact_sum_value": (S, [P(ExactSum), P(c_double)]),
    "peat_signature_read_sums": (S, [P(Signature), P(SignatureSums)]),
    "peat_signature_rmse": (S, [P(Signature), P(c_double)]),
    "peat_signature_relative_l2": (S, [P(Signature), P(c_double)]),
    "peat_signature_sqnr_db": (S, [P(Signature), P(c_double)]),
    "peat_signature_cosine": (S, [P(Signature), P(c_double)]),
    "peat_signature_max_rel_error": (S, [P(Signature), P(c_double)]),
    "peat_signature_allclose": (S, [P(Signature), P(c_int32)]),
    "peat_signature_effective_mantissa_bits": (S, [P(Signature), c_double, P(c_double)]),
    "peat_signature_rounding_bound_ratio": (S, [P(Signature), P(c_double), P(c_double)]),
    "peat_aggregator_options_init": (None, [P(AggregatorOptions)]),
    "peat_aggregator_create": (S, [P(AggregatorOptions), P(c_void_p)]),
    "peat_aggregator_destroy": (None, [c_void_p]),
    "peat_aggregator_add": (S, [c_void_p, c_uint32, c_int64, c_uint64, P(Signature)]),
    "peat_aggregator_signature": (S, [c_void_p, c_uint32, P(Signature)]),
    "peat_aggregator_series": (S, [c_void_p, c_uint32, P(SeriesPoint), c_size_t, P(c_size_t)]),
    "peat_aggregator_call_count": (S, [c_void_p, c_uint32, P(c_uint64)]),
    "peat_loss_compare_options_init": (None, [P(LossCompareOptions)]),
    "peat_compare_loss": (S, [P(c_double), P(c_double), P(c_int64), c_size_t,
                              P(LossCompareOptions), P(LossComparison)]),
    "peat_noise_band_options_init": (None, [P(NoiseBandOptions)]),
    "peat_noise_band_create": (S, [P(c_double), c_size_t, P(NoiseBandOptions), P(c_void_p)]),
    "peat_noise_band_destroy": (None, [c_void_p]),
    "peat_noise_band_add_rerun": (S, [c_void_p, P(c_double), c_size_t, c_double]),
    "peat_noise_band_info": (S, [c_void_p, P(NoiseBandInfo)]),
    "peat_noise_band_judge": (S, [c_void_p, P(c_double), c_size_t, P(c_int64), c_double,
                                  P(Impact)]),
    # trace.h
    "peat_trace_reader_options_init": (None, [P(TraceReaderOptions)]),
    "peat_trace_open": (S, [c_char_p, P(TraceReaderOptions), P(c_void_p)]),
    "peat_trace_recover": (S, [c_char_p, P(TraceReaderOptions), P(c_void_p), P(TraceRecovery)]),
    "peat_trace_close": (None, [c_void_p]),
    "peat_trace_run_info": (S, [c_void_p, P(TraceRunInfo)]),
    "peat_trace_tag": (S, [c_void_p, c_uint64, P(c_char_p), P(c_char_p)]),
    "peat_trace_record_count": (S, [c_void_p, P(c_uint64)]),
    "peat_trace_record_info": (S, [c_void_p, c_uint64, P(TraceRecordInfo)]),
    "peat_trace_attr": (S, [c_void_p, c_uint64, c_uint64, P(Attr)]),
    "peat_trace_filter_init": (None, [P(TraceFilter)]),
    "peat_trace_next": (S, [c_void_p, P(TraceFilter), c_uint64, P(c_uint64)]),
    "peat_trace_tensor_count": (S, [c_void_p, c_uint64, c_int32, P(c_uint64)]),
    "peat_trace_tensor_info": (S, [c_void_p, c_uint64, c_int32, c_uint64, P(TraceTensorInfo)]),
    "peat_trace_load_tensor": (S, [c_void_p, c_uint64, c_int32, c_uint64, c_void_p, c_size_t]),
    "peat_trace_load_tensor_alloc": (S, [c_void_p, c_uint64, c_int32, c_uint64,
                                         P(P(DLManagedTensor))]),
    "peat_trace_tensor_free": (None, [P(DLManagedTensor)]),
    "peat_trace_verify": (S, [c_void_p, P(c_uint64)]),
    "peat_trace_skipped": (S, [c_void_p, P(c_uint64), P(c_char_p)]),
    "peat_trace_copy_intact": (S, [c_void_p, c_char_p, P(c_uint64), P(c_uint64)]),
    # profiler.h
    "peat_profiler_options_init": (None, [P(ProfilerOptions)]),
    "peat_profiler_create": (S, [c_void_p, P(ProfilerOptions), P(c_void_p)]),
    "peat_profiler_destroy": (None, [c_void_p]),
    "peat_sample_rule_init": (None, [P(SampleRule)]),
    "peat_profiler_add_rule": (S, [c_void_p, P(SampleRule)]),
    "peat_profiler_should_record": (S, [c_void_p, c_uint32, c_uint64, c_int64, P(c_int32)]),
    "peat_op_record_init": (None, [P(OpRecord)]),
    "peat_profiler_record_op": (S, [c_void_p, P(OpRecord), P(c_int32), P(c_uint64)]),
    "peat_profiler_record_checkpoint": (S, [c_void_p, c_char_p, c_int64, P(c_char_p),
                                            P(P(DLTensor)), c_uint64, c_void_p, P(c_int32)]),
    "peat_profiler_record_scalar": (S, [c_void_p, c_char_p, c_int64, c_double]),
    "peat_profiler_mark_step": (S, [c_void_p, c_int64]),
    "peat_profiler_flush": (S, [c_void_p]),
    "peat_profiler_close": (S, [c_void_p]),
    "peat_profiler_stats": (S, [c_void_p, P(ProfilerStats)]),
    # injector.h
    "peat_inject_spec_init": (None, [P(InjectSpec), c_int32]),
    "peat_inject_truth_init": (None, [P(InjectTruth)]),
    "peat_inject_apply": (S, [P(InjectSpec), P(DLTensor), P(DLTensor), c_uint64, c_uint32,
                              c_uint32, P(InjectTruth)]),
    "peat_inject_round_value": (S, [c_double, c_int32, c_int32, c_int32, P(c_double)]),
    "peat_inject_kind_name": (c_char_p, [c_int32]),
    "peat_error_model_name": (c_char_p, [c_int32]),
    "peat_injector_options_init": (None, [P(InjectorOptions)]),
    "peat_injector_policy_init": (None, [P(InjectorPolicy)]),
    "peat_injector_create": (S, [c_void_p, P(InjectorOptions), P(c_void_p)]),
    "peat_injector_destroy": (None, [c_void_p]),
    "peat_injector_add_policy": (S, [c_void_p, P(InjectorPolicy), P(c_uint32)]),
    "peat_injector_clear_policies": (S, [c_void_p]),
    "peat_injector_decide": (c_int32, [c_void_p, c_uint32, P(c_uint64)]),
    "peat_injector_decide_call": (c_int32, [c_void_p, c_uint32, c_uint64]),
    "peat_injector_decide_policy": (c_int32, [c_void_p, c_uint32, P(c_uint64), P(c_int32)]),
    "peat_injector_inject": (S, [c_void_p, c_int32, c_uint32, c_uint64, P(DLTensor),
                                 P(DLTensor), P(InjectTruth)]),
    "peat_injector_set_candidate": (S, [c_void_p, c_char_p, KERNEL_FN, c_void_p]),
    "peat_injector_set_candidate_symbol": (S, [c_void_p, c_char_p, c_char_p, c_void_p]),
    "peat_injector_dispatch": (S, [c_void_p, c_uint32, P(DLTensor), c_int32, P(DLTensor),
                                   c_int32, c_void_p, KERNEL_FN, c_void_p, P(c_int32),
                                   P(c_uint64)]),
    "peat_injector_firing_count": (S, [c_void_p, P(c_uint64), P(c_uint64)]),
    "peat_injector_firing": (S, [c_void_p, c_uint64, P(Firing)]),
    "peat_injector_firing_signature": (S, [c_void_p, c_uint64, P(Signature)]),
    "peat_injector_write_log": (S, [c_void_p, c_char_p, c_int32]),
    "peat_action_name": (c_char_p, [c_int32]),
    # detector.h
    "peat_detect_context_init": (None, [P(DetectContext)]),
    "peat_detection_init": (None, [P(Detection)]),
    "peat_detect": (S, [P(Signature), P(DetectContext), P(Detection)]),
    "peat_detection_render": (S, [P(Detection), c_int32, c_char_p, c_size_t, P(c_size_t)]),
    "peat_op_kind_name": (c_char_p, [c_int32]),
    "peat_float_format_name": (c_char_p, [c_int32]),
    "peat_op_family": (c_size_t, [c_char_p, c_char_p, c_size_t]),
    "peat_detect_context_infer": (S, [P(DetectContext), c_char_p, c_uint64, P(c_int32),
                                      P(P(c_int64)), P(Attr), c_uint64, c_uint64, c_int64]),
    # playback.h
    "peat_playback_detect_context": (S, [c_void_p, c_uint64, c_uint64, c_int64, P(DetectContext)]),
    "peat_playback_group_verdicts": (S, [c_void_p, c_int32, c_uint64, c_uint64,
                                         P(PlaybackVerdicts)]),
    "peat_playback_result_detection": (S, [c_void_p, c_uint64, c_uint64, P(Detection)]),
    "peat_playback_options_init": (None, [P(PlaybackOptions)]),
    "peat_report_options_init": (None, [P(ReportOptions)]),
    "peat_report_create": (S, [P(ReportOptions), P(c_void_p)]),
    "peat_report_destroy": (None, [c_void_p]),
    "peat_report_add_input": (S, [c_void_p, c_char_p, P(c_int32)]),
    "peat_report_add_signature": (S, [c_void_p, c_char_p, c_char_p, c_int64, c_uint64, P(Signature),
                                      P(Detection)]),
    "peat_report_add_spatial_map": (S, [c_void_p, c_char_p, P(SpatialMap)]),
    "peat_report_render_html": (S, [c_void_p, c_char_p, c_size_t, P(c_size_t)]),
    "peat_report_write_html": (S, [c_void_p, c_char_p]),
    "peat_report_add_playback": (S, [c_void_p, c_char_p, c_void_p]),
    "peat_report_focus_call": (S, [c_void_p, c_char_p, P(c_uint64), P(c_uint64)]),
    "peat_report_add_candidate_map": (S, [c_void_p, c_char_p, c_char_p, P(SpatialMap)]),
    "peat_report_add_noise_band": (S, [c_void_p, c_char_p, c_void_p]),
    "peat_report_fi_run_init": (None, [P(ReportFiRun)]),
    "peat_report_add_fi_run": (S, [c_void_p, P(ReportFiRun)]),
    "peat_playback_create": (S, [c_void_p, P(PlaybackOptions), P(c_void_p)]),
    "peat_playback_destroy": (None, [c_void_p]),
    "peat_playback_set_candidate": (S, [c_void_p, KERNEL_FN, c_void_p]),
    "peat_playback_set_candidate_symbol": (S, [c_void_p, c_char_p, c_void_p]),
    "peat_playback_candidate": (S, [c_void_p, P(c_void_p), P(c_void_p)]),
    "peat_playback_run": (S, [c_void_p]),
    "peat_playback_summary": (S, [c_void_p, P(PlaybackSummary)]),
    "peat_playback_result_count": (S, [c_void_p, P(c_uint64)]),
    "peat_playback_result": (S, [c_void_p, c_uint64, P(PlaybackResult)]),
    "peat_playback_result_signature": (S, [c_void_p, c_uint64, c_uint64, c_int32,
                                           P(Signature)]),
    "peat_playback_group_count": (S, [c_void_p, c_int32, P(c_uint64)]),
    "peat_playback_group": (S, [c_void_p, c_int32, c_uint64, P(PlaybackGroup)]),
    "peat_playback_group_signature": (S, [c_void_p, c_int32, c_uint64, c_uint64, c_int32,
                                          P(Signature)]),
    "peat_playback_write_jsonl": (S, [c_void_p, c_char_p, c_int32]),
    "peat_playback_partition_share": (S, [c_void_p, c_uint32, POINTER(c_uint64), POINTER(c_uint64),
                                          POINTER(c_uint64)]),
    "peat_playback_export": (S, [c_void_p, c_void_p, c_size_t, POINTER(c_size_t)]),
    "peat_playback_import": (S, [c_void_p, c_void_p, c_size_t]),
}

# (struct, its init function, extra init arguments): sizes the library reports.
_SIZE_CHECKS = [
    (SessionOptions, "peat_session_options_init", ()),
    (Signature, "peat_signature_init", ()),
    (SignatureConfig, "peat_signature_config_init", ()),
    (SpatialMap, "peat_spatial_map_init", ()),
    (AggregatorOptions, "peat_aggregator_options_init", ()),
    (LossCompareOptions, "peat_loss_compare_options_init", ()),
    (NoiseBandOptions, "peat_noise_band_options_init", ()),
    (TraceReaderOptions, "peat_trace_reader_options_init", ()),
    (TraceFilter, "peat_trace_filter_init", ()),
    (ProfilerOptions, "peat_profiler_options_init", ()),
    (SampleRule, "peat_sample_rule_init", ()),
    (OpRecord, "peat_op_record_init", ()),
    (InjectSpec, "peat_inject_spec_init", (0,)),
    (InjectTruth, "peat_inject_truth_init", ()),
    (InjectorOptions, "peat_injector_options_init", ()),
    (InjectorPolicy, "peat_injector_policy_init", ()),
    (DetectContext, "peat_detect_context_init", ()),
    (Detection, "peat_detection_init", ()),
    (PlaybackOptions, "peat_playback_options_init", ()),
    (ReportOptions, "peat_report_options_init", ()),
    (ReportFiRun, "peat_report_fi_run_init", ()),
]


class LibraryNotFound(ImportError):
    """libpeat could not be found or is not a version this package supports."""


def _candidates():
    env = os.environ.get("PEAT_LIBRARY")
    if env:
        yield Path(env)
        return
    here = Path(__file__).resolve().parent
    for name in ("libpeat.so", f"libpeat.so.{EXPECTED_ABI_VERSION}"):
        yield here / name  # next to the package
    try:  # installed by cmake --install: the prefix's library
        from . import _installed
        yield (here / _installed.LIBRARY).resolve()
    except ImportError:
        pass
    for parent in here.parents:  # the build tree of a source checkout
        build = parent / "build" / "lib"
        if (build / "libpeat.so").exists():
            yield build / "libpeat.so"
            break
    found = ctypes.util.find_library("peat")  # the system
    if found:
        yield Path(found)
    yield Path(f"libpeat.so.{EXPECTED_ABI_VERSION}")


def _load():
    errors = []
    for path in _candidates():
        if path.is_absolute() and not path.exists():
            errors.append(f"{path}: no such file")
            continue
        try:
            lib = ctypes.CDLL(str(path))
        except OSError as exc:
            errors.append(f"{path}: {exc}")
            continue
        return lib, str(path)
    raise LibraryNotFound("libpeat not found (set PEAT_LIBRARY to its path); tried: " +
                          "; ".join(errors))


def _bind(lib):
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def _check(lib, path):
    version = lib.peat_version_number()
    abi = lib.peat_abi_version()
    if abi != EXPECTED_ABI_VERSION:
        raise LibraryNotFound(f"{path}: ABI version {abi}, this package needs "
                              f"{EXPECTED_ABI_VERSION}")
    # Minor releases only add (docs/abi-policy.md): a library of the same major
    # version, at least as new as this package, serves it.
    if version // 10000 != EXPECTED_VERSION_NUMBER // 10000 or version < EXPECTED_VERSION_NUMBER:
        raise LibraryNotFound(f"{path}: library version {version}, this package needs "
                              f"{EXPECTED_VERSION_NUMBER} or newer of the same major version")
    for struct, init, extra in _SIZE_CHECKS:
        s = struct()
        getattr(lib, init)(ctypes.byref(s), *extra)
        if s.struct_size != ctypes.sizeof(struct):
            raise LibraryNotFound(f"{path}: {init} reports struct_size {s.struct_size}, the "
                                  f"Python mirror {struct.__name__} has {ctypes.sizeof(struct)}")


lib, library_path = _load()
_bind(lib)
_check(lib, library_path)
