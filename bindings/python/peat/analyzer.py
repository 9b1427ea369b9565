"""Signatures of (golden, candidate) pairs, their derived metrics, spatial
maps, per-op aggregation and loss-series comparison (peat/analyzer.h)."""
from __future__ import annotations

import ctypes
import dataclasses
import math
from ctypes import byref, c_double, c_int32, c_size_t, c_uint64, c_void_p

from . import _capi
from ._capi import lib
from ._handle import OwnsHandle
from ._tensor import view
from .errors import check

_CONFIG_FIELDS = ("rtol", "atol", "reduction_length", "unit_roundoff", "ratio_min_abs",
                  "index_base", "spatial_rows", "spatial_cols", "tile_rows", "tile_cols",
                  "map_mismatch", "num_threads")


def _dtype_name(dt) -> str:
    return lib.peat_dtype_name(dt).decode() if dt.bits else ""


def _json_float(x: float):
    return x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))


def make_config(**kwargs) -> _capi.SignatureConfig:
    """A peat_signature_config_t with the library defaults and `kwargs` set
    (rtol, atol, reduction_length, unit_roundoff, ratio_min_abs, index_base,
    spatial_rows, spatial_cols, tile_rows, tile_cols, map_mismatch
    ("tolerance"/"bitwise"), num_threads)."""
    cfg = _capi.SignatureConfig()
    lib.peat_signature_config_init(byref(cfg))
    for key, value in kwargs.items():
        if key not in _CONFIG_FIELDS:
            raise TypeError(f"peat: unknown signature config field {key!r}")
        if key == "map_mismatch" and isinstance(value, str):
            value = {"tolerance": 0, "bitwise": 1}[value]
        setattr(cfg, key, value)
    return cfg


@dataclasses.dataclass
class Signature:
    """The error signature of a (golden, candidate) pair (peat_signature_t).

    The counts and extrema are plain fields; derived metrics (rmse, sqnr_db,
    effective_mantissa_bits, rounding_bound_ratio, ...) are properties computed
    by the library. `to_dict()` gives a JSON-serialisable dict."""
    golden_dtype: str
    candidate_dtype: str
    count: int
    bitwise_mismatch_count: int
    value_mismatch_count: int
    tolerance_fail_count: int
    new_nonfinite_count: int
    lost_nonfinite_count: int
    sign_flip_count: int
    dropped_count: int
    spurious_count: int
    finite_count: int
    max_abs_error: float
    max_abs_error_index: int
    max_rel_error_index: int
    max_abs_golden: float
    reduction_length: int
    unit_roundoff: float
    rtol: float
    atol: float
    ulp_hist: list
    rel_hist: list
    xor_bit_hist: list
    xor_popcount_hist: list
    #: Per storage bit b: mismatching pairs whose highest differing bit is b,
    #: and of those, the pairs whose candidate word has bit b set (0.2; all
    #: zero in a signature from a 0.1 library). The Detector's stuck-bit rule
    #: reads them.
    xor_top_bit_hist: list
    xor_top_bit_set_hist: list
    #: Per storage bit b: mismatching pairs whose candidate word (sign bit
    #: cleared, non-zero) has its lowest set bit at b -- the grid the
    #: candidate's values lie on (0.2). The Detector names a narrow storage
    #: format from its lowest non-empty entry.
    candidate_low_bit_hist: list
    raw: _capi.Signature = dataclasses.field(repr=False, compare=False)

    @classmethod
    def from_struct(cls, s: _capi.Signature) -> "Signature":
        copy = _capi.Signature()
        ctypes.pointer(copy)[0] = s
        plain = {f.name: getattr(s, f.name) for f in dataclasses.fields(cls)
                 if f.name not in ("golden_dtype", "candidate_dtype", "raw") and
                 not f.name.endswith("_hist")}
        return cls(golden_dtype=_dtype_name(s.golden_dtype),
                   candidate_dtype=_dtype_name(s.candidate_dtype),
                   ulp_hist=list(s.ulp_hist), rel_hist=list(s.rel_hist),
                   xor_bit_hist=list(s.xor_bit_hist),
                   xor_popcount_hist=list(s.xor_popcount_hist),
                   xor_top_bit_hist=list(s.xor_top_bit_hist),
                   xor_top_bit_set_hist=list(s.xor_top_bit_set_hist),
                   candidate_low_bit_hist=list(s.candidate_low_bit_hist), raw=copy, **plain)

    def _metric(self, fn) -> float:
        out = c_double()
        check(fn(byref(self.raw), byref(out)), fn.__name__)
        return out.value

    @property
    def rmse(self) -> float:
        return self._metric(lib.peat_signature_rmse)

    @property
    def relative_l2(self) -> float:
        return self._metric(lib.peat_signature_relative_l2)

    @property
    def sqnr_db(self) -> float:
        return self._metric(lib.peat_signature_sqnr_db)

    @property
    def cosine(self) -> float:
        return self._metric(lib.peat_signature_cosine)

    @property
    def max_rel_error(self) -> float:
        return self._metric(lib.peat_signature_max_rel_error)

    @property
    def allclose(self) -> bool:
        out = c_int32()
        check(lib.peat_signature_allclose(byref(self.raw), byref(out)), "peat_signature_allclose")
        return bool(out.value)

    def effective_mantissa_bits(self, quantile: float = 0.99) -> float:
        out = c_double()
        check(lib.peat_signature_effective_mantissa_bits(byref(self.raw), quantile, byref(out)),
              "peat_signature_effective_mantissa_bits")
        return out.value

    @property
    def mantissa_bits(self) -> float:
        """effective_mantissa_bits at the 0.99 quantile."""
        return self.effective_mantissa_bits(0.99)

    @property
    def rounding_bound_ratio(self) -> tuple:
        """(deterministic, probabilistic) error relative to the rounding bound of
        an op with the signature's reduction length K (needs K > 0)."""
        det, prob = c_double(), c_double()
        check(lib.peat_signature_rounding_bound_ratio(byref(self.raw), byref(det), byref(prob)),
              "peat_signature_rounding_bound_ratio")
        return det.value, prob.value

    @property
    def sums(self) -> dict:
        """The exact sums rounded to doubles, and the c/g ratio mean and M2
        (peat_signature_read_sums): sum_error, sum_abs_error, sum_sq_error,
        sum_sq_golden, sum_sq_candidate, sum_golden_candidate, ratio_mean, ratio_m2."""
        out = _capi.SignatureSums()
        out.struct_size = ctypes.sizeof(out)
        check(lib.peat_signature_read_sums(byref(self.raw), byref(out)), "peat_signature_read_sums")
        return {name: getattr(out, name) for name, _ in _capi.SignatureSums._fields_
                if name not in ("struct_size", "reserved")}

    def exact_sum(self, name: str) -> float:
        """One exact sum field (e.g. "sum_sq_error", "ratio_dev_sum") rounded
        once to the nearest double (peat_exact_sum_value); +-Inf or NaN when
        non-finite terms were added or the sum is out of the double range."""
        field = getattr(self.raw, name)
        if not isinstance(field, _capi.ExactSum):
            raise ValueError(f"{name} is not an exact sum of peat_signature_t")
        out = ctypes.c_double()
        check(lib.peat_exact_sum_value(byref(field), byref(out)), "peat_exact_sum_value")
        return out.value

    def merge(self, other: "Signature") -> "Signature":
        """A new signature: this one merged with `other` (peat_signature_merge)."""
        dst = _capi.Signature()
        ctypes.pointer(dst)[0] = self.raw
        check(lib.peat_signature_merge(byref(dst), byref(other.raw)), "peat_signature_merge")
        return Signature.from_struct(dst)

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "raw"}
        for key in ("rmse", "relative_l2", "sqnr_db", "cosine", "max_rel_error", "allclose"):
            d[key] = getattr(self, key)
        d.update(self.sums)
        d["mantissa_bits"] = self.mantissa_bits if self.count else None
        d["rounding_bound_ratio"] = list(self.rounding_bound_ratio) if (
            self.reduction_length > 0 and self.reduction_length * self.unit_roundoff < 1) else None
        return {k: (_json_float(v) if isinstance(v, float) else v) for k, v in d.items()}


@dataclasses.dataclass
class SpatialMap:
    """Where the mismatches lie on a rows x cols view (peat_spatial_map_t).
    `raw` is the C map over buffers this object owns, so it can go to
    peat.detect (REGION, lane periods) and merge()."""
    rows: int
    cols: int
    tile_rows: int
    tile_cols: int
    row_counts: list
    col_counts: list
    tile_counts: list
    lane32_counts: list
    lane64_counts: list
    mismatch_count: int
    first_mismatch: int
    last_mismatch: int
    longest_run: int
    longest_run_start: int
    raw: _capi.SpatialMap = dataclasses.field(repr=False, compare=False, default=None)

    @classmethod
    def from_struct(cls, m: _capi.SpatialMap) -> "SpatialMap":
        grid = m.tile_grid_rows * m.tile_grid_cols
        return cls(m.rows, m.cols, m.tile_rows, m.tile_cols, m.row_counts[:m.rows],
                   m.col_counts[:m.cols], m.tile_counts[:grid], list(m.lane32_counts),
                   list(m.lane64_counts), m.mismatch_count, m.first_mismatch,
                   m.last_mismatch, m.longest_run, m.longest_run_start, m)

    def merge(self, other: "SpatialMap") -> "SpatialMap":
        """A new map: this one merged with `other`, which must have the same
        geometry and cover the element range right after (or before) this
        one's (peat_spatial_map_merge)."""
        dst = _owned_map(self.rows, self.cols, max(len(self.tile_counts), 1))
        check(lib.peat_spatial_map_merge(byref(dst), byref(self.raw)), "peat_spatial_map_merge")
        check(lib.peat_spatial_map_merge(byref(dst), byref(other.raw)), "peat_spatial_map_merge")
        return SpatialMap.from_struct(dst)

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name != "raw"}

    def __del__(self):
        # The buffers are ours, so this frees nothing; it keeps the C contract
        # (release every map) should a later library version own storage here.
        if self.raw is not None:
            try:
                lib.peat_spatial_map_release(byref(self.raw))
            except Exception:
                pass


def _owned_map(rows: int, cols: int, tiles: int) -> _capi.SpatialMap:
    """An empty C map over caller-owned buffers of the given geometry (kept
    alive as attributes of the struct object)."""
    m = _capi.SpatialMap()
    lib.peat_spatial_map_init(byref(m))
    m._rows = (c_uint64 * max(rows, 1))()
    m._cols = (c_uint64 * max(cols, 1))()
    m._tiles = (c_uint64 * max(tiles, 1))()
    m.row_counts, m.row_capacity = ctypes.cast(m._rows, ctypes.POINTER(c_uint64)), max(rows, 1)
    m.col_counts, m.col_capacity = ctypes.cast(m._cols, ctypes.POINTER(c_uint64)), max(cols, 1)
    m.tile_counts, m.tile_capacity = (ctypes.cast(m._tiles, ctypes.POINTER(c_uint64)),
                                      max(tiles, 1))
    return m


def _map_geometry(g, cfg) -> tuple:
    """(rows, cols, tiles) of the map of `g` under `cfg`. An explicit spatial
    view (a piece of a larger output at index_base) has the view's geometry;
    otherwise the library says (peat_spatial_map_shape, which checks the view
    against the tensor alone)."""
    if cfg.spatial_rows > 0 and cfg.spatial_cols > 0:
        grid = (-(-cfg.spatial_rows // cfg.tile_rows)) * (-(-cfg.spatial_cols // cfg.tile_cols))
        return cfg.spatial_rows, cfg.spatial_cols, grid
    rows, cols, tiles = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
    check(lib.peat_spatial_map_shape(g.ref, byref(cfg), byref(rows), byref(cols), byref(tiles)),
          "peat_spatial_map_shape")
    return rows.value, cols.value, tiles.value


def spatial_map_shape(golden, **config) -> tuple:
    """(rows, cols, tiles) of the spatial map peat.analyze would build for
    `golden` under `config` (peat_spatial_map_shape)."""
    rows, cols, tiles = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
    cfg = make_config(**config)
    check(lib.peat_spatial_map_shape(view(golden).ref, byref(cfg), byref(rows), byref(cols),
                                     byref(tiles)), "peat_spatial_map_shape")
    return rows.value, cols.value, tiles.value


def _device_contiguous(x):
    """A strided torch tensor in GPU memory as a contiguous copy on its device
    (the device backends take contiguous tensors); anything else as it is."""
    if type(x).__module__.startswith("torch") and x.device.type != "cpu" and not x.is_contiguous():
        return x.contiguous()
    return x


def _device_backend(g, c):
    """The backend of the device memory g or c is in (None: both host memory)."""
    host = (_capi.kDLCPU, _capi.kDLCUDAHost, _capi.kDLROCMHost)
    kind = next((v.dl.device.device_type for v in (g, c) if v.dl.device.device_type not in host), None)
    if kind is None:
        return None
    from .backend import Backend
    return Backend.for_device(kind)


def analyze(golden, candidate, *, spatial_map: bool = False, **config):
    """Signature of (golden, candidate): numpy arrays or torch tensors of
    the same shape, any strides, dtypes f16/bf16/f32/f64. `config` sets
    peat_signature_config_t fields (see make_config). With spatial_map=True
    returns (Signature, SpatialMap). Tensors in GPU memory (torch CUDA
    tensors) are analyzed by that device's backend (Backend.signature, on
    one device; strided torch tensors are made contiguous there first); host
    memory by the library."""
    g, c = view(_device_contiguous(golden)), view(_device_contiguous(candidate))
    backend = _device_backend(g, c)
    if backend is not None:
        if not spatial_map:
            return backend.signature(g, c, **config)
        return backend.signature(g, c, None, _owned_map(*_map_geometry(g, make_config(**config))),
                                 **config)
    cfg = make_config(**config)
    sig = _capi.Signature()
    lib.peat_signature_init(byref(sig))
    if not spatial_map:
        check(lib.peat_analyze(g.ref, c.ref, byref(cfg), byref(sig), None), "peat_analyze")
        return Signature.from_struct(sig)
    m = _owned_map(*_map_geometry(g, cfg))
    check(lib.peat_analyze(g.ref, c.ref, byref(cfg), byref(sig), byref(m)), "peat_analyze")
    return Signature.from_struct(sig), SpatialMap.from_struct(m)


def analyze_accumulate(golden, candidate, signature: Signature | None = None,
                       spatial_map: SpatialMap | None = None, **config):
    """Analyzes one piece of a larger output and merges it into `signature`
    (a new Signature is returned; `signature` itself is left as it was) and,
    when given, into `spatial_map` in place (same geometry; set index_base
    in `config` to the piece's first element index). Returns the merged
    Signature, or (Signature, SpatialMap) when a map is given
    (peat_analyze_accumulate; device memory as for analyze)."""
    g, c = view(_device_contiguous(golden)), view(_device_contiguous(candidate))
    backend = _device_backend(g, c)
    if backend is not None:
        return backend.signature(g, c, signature, spatial_map, **config)
    cfg = make_config(**config)
    sig = _capi.Signature()
    if signature is None:
        lib.peat_signature_init(byref(sig))
    else:
        ctypes.pointer(sig)[0] = signature.raw
    raw_map = spatial_map.raw if spatial_map is not None else None
    check(lib.peat_analyze_accumulate(g.ref, c.ref, byref(cfg), byref(sig),
                                      byref(raw_map) if raw_map is not None else None),
          "peat_analyze_accumulate")
    if spatial_map is None:
        return Signature.from_struct(sig)
    return Signature.from_struct(sig), SpatialMap.from_struct(raw_map)


def empty_spatial_map(golden, **config) -> SpatialMap:
    """An empty map with the geometry peat.analyze would give `golden` under
    `config`, for analyze_accumulate over pieces of a larger output."""
    return SpatialMap.from_struct(_owned_map(*_map_geometry(view(golden), make_config(**config))))


def default_tolerance(dtype: str) -> tuple:
    """(rtol, atol) of a dtype name, those of torch.testing.assert_close."""
    from . import dtype_from_name
    rtol, atol = c_double(), c_double()
    check(lib.peat_default_tolerance(dtype_from_name(dtype), byref(rtol), byref(atol)),
          "peat_default_tolerance")
    return rtol.value, atol.value


@dataclasses.dataclass
class SeriesPoint:
    step: int
    call: int
    count: int
    tolerance_fail_count: int
    nonfinite_count: int
    max_abs_error: float
    max_rel_error: float
    relative_l2: float


class Aggregator(OwnsHandle):
    """Per-op accumulation of signatures over calls and steps (peat_aggregator_t)."""

    _h = None  # the C handle; None until created, after close

    def __init__(self, max_ops: int = 4096, series_capacity: int = 4096):
        opts = _capi.AggregatorOptions()
        lib.peat_aggregator_options_init(byref(opts))
        opts.max_ops, opts.series_capacity = max_ops, series_capacity
        handle = c_void_p()
        check(lib.peat_aggregator_create(byref(opts), byref(handle)), "peat_aggregator_create")
        self._h = handle

    def close(self) -> None:
        if self._h:
            lib.peat_aggregator_destroy(self._h)
            self._h = c_void_p()

    def add(self, op: int, step: int, call: int, signature: Signature) -> None:
        check(lib.peat_aggregator_add(self._h, op, step, call, byref(signature.raw)),
              "peat_aggregator_add")

    def signature(self, op: int) -> Signature:
        s = _capi.Signature()
        lib.peat_signature_init(byref(s))
        check(lib.peat_aggregator_signature(self._h, op, byref(s)), "peat_aggregator_signature")
        return Signature.from_struct(s)

    def call_count(self, op: int) -> int:
        n = c_uint64()
        check(lib.peat_aggregator_call_count(self._h, op, byref(n)), "peat_aggregator_call_count")
        return n.value

    def series(self, op: int) -> list:
        n = c_size_t()
        check(lib.peat_aggregator_series(self._h, op, None, 0, byref(n)), "peat_aggregator_series")
        points = (_capi.SeriesPoint * max(n.value, 1))()
        check(lib.peat_aggregator_series(self._h, op, points, n.value, byref(n)),
              "peat_aggregator_series")
        return [SeriesPoint(*(getattr(p, f[0]) for f in _capi.SeriesPoint._fields_))
                for p in points[:n.value]]


def compare_loss(golden, candidate, steps=None, *, band_abs: float = 0.0, band_rel: float = 0.01,
                 window: int = 1, patience: int = 1) -> dict:
    """Compares two loss series (peat_compare_loss); returns the comparison as a dict."""
    n = len(golden)
    if len(candidate) != n:
        raise ValueError("peat: golden and candidate loss series differ in length")
    g = (c_double * max(n, 1))(*golden)
    c = (c_double * max(n, 1))(*candidate)
    st = (ctypes.c_int64 * n)(*steps) if steps is not None else None
    opts = _capi.LossCompareOptions()
    lib.peat_loss_compare_options_init(byref(opts))
    opts.band_abs, opts.band_rel, opts.window, opts.patience = band_abs, band_rel, window, patience
    out = _capi.LossComparison()
    out.struct_size = ctypes.sizeof(out)
    check(lib.peat_compare_loss(g, c, st, n, byref(opts), byref(out)), "peat_compare_loss")
    return {f[0]: _json_float(getattr(out, f[0])) if isinstance(getattr(out, f[0]), float)
            else getattr(out, f[0]) for f in out._fields_ if f[0] not in ("struct_size", "reserved")}


def compare_checkpoints(golden: dict, candidate: dict, **config) -> dict:
    """Per-tensor drift between two checkpoints ({name: array}): {name:
    Signature}, or {name: None} for a name only one side has or a pair that
    cannot be compared (peat_compare_checkpoints)."""
    from ._capi import NamedTensor
    gv = {k: view(v) for k, v in golden.items()}
    cv = {k: view(v) for k, v in candidate.items()}
    g = (NamedTensor * max(len(gv), 1))(*[NamedTensor(k.encode(), ctypes.pointer(v.dl))
                                           for k, v in gv.items()])
    c = (NamedTensor * max(len(cv), 1))(*[NamedTensor(k.encode(), ctypes.pointer(v.dl))
                                           for k, v in cv.items()])
    cap = len(gv) + len(cv)
    drift = (_capi.TensorDrift * max(cap, 1))()
    sigs = (_capi.Signature * max(cap, 1))()
    for s in sigs:
        lib.peat_signature_init(byref(s))
    n = c_size_t()
    cfg = make_config(**config)
    check(lib.peat_compare_checkpoints(g, len(gv), c, len(cv), byref(cfg), drift, sigs, cap,
                                       byref(n)), "peat_compare_checkpoints")
    return {drift[i].name.decode(): (Signature.from_struct(sigs[i]) if drift[i].status == 0
                                     else None) for i in range(n.value)}
