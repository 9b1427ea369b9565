"""ctypes mirror of PEAT's public C structs (include/peat/*.h), field by field,
with the DLPack enums and the callback types. Part of peat._capi, which
re-exports every name here; import them from there.
"""
from __future__ import annotations

from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_int,
                    c_int32, c_int64, c_size_t, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p)

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
                ("xor_top_bit_set_hist", c_uint64 * XOR_BITS),
                ("candidate_low_bit_hist", c_uint64 * XOR_BITS)]


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
                ("spec", POINTER(InjectSpec)), ("output_index", c_int32),
                ("run_twice", c_int32)]


class Firing(Structure):
    _fields_ = [("struct_size", c_uint32), ("op", c_uint32), ("call", c_uint64),
                ("step", c_int64), ("phase", c_int32), ("action", c_int32), ("policy", c_int32),
                ("status", c_int32), ("kept_golden", c_int32), ("compared", c_int32),
                ("elements", c_int64), ("mismatches", c_int64), ("new_nonfinite", c_int64),
                ("max_abs_error", c_double), ("max_rel_error", c_double),
                ("rms_error", c_double), ("injected", c_int64), ("rerun_mismatches", c_int64)]


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
