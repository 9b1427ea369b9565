"""The Detector: names the error model behind a signature (peat/detector.h).

    sig, smap = peat.analyze(golden, candidate, spatial_map=True, reduction_length=k)
    det = peat.detect(sig, op_kind="gemm", spatial_map=smap)
    print(det.top.model, det.top.effective_mantissa_bits, det.top.evidence)
    json.dumps(det.to_dict())

The rules and thresholds are the library's (docs/error-models.md); this module
only converts arguments and results.
"""
from __future__ import annotations

import ctypes
import dataclasses
from ctypes import byref, c_size_t

from . import _capi
from ._capi import lib
from .errors import BufferTooSmallError, check

OP_KINDS = {"unknown": 0, "gemm": 1, "conv": 2, "reduction": 3, "elementwise": 4}
RENDER_FORMATS = {"text": 0, "json": 1, "csv": 2}
#: peat_error_model_t codes by name (the injector labels and the Detector's verdicts).
MODELS = {"EXACT": 0, "ROUNDING": 1, "REDUCED_PRECISION": 2, "BITFLIP_SINGLE": 3,
          "BITFLIP_MULTI": 4, "STUCK_AT": 5, "REGION": 6, "DROPPED_WRITES": 7, "SCALING": 8,
          "NONFINITE": 9, "NONDETERMINISM": 10, "GARBAGE": 11, "UNKNOWN": 12}


def op_kind_name(kind: int) -> str:
    """"gemm", "conv", ... of a peat_op_kind_t code ("unknown" for others)."""
    return lib.peat_op_kind_name(kind).decode()


def float_format_name(fmt: int) -> str:
    """"bf16", "fp16", "tf32", "fp8_e4m3", "fp8_e5m2"; "none" for -1."""
    return lib.peat_float_format_name(fmt).decode()


def op_family(op: str) -> str:
    """The library's family of an op name ("cublasSgemm_v2" -> "gemm";
    peat_op_family)."""
    n = lib.peat_op_family(op.encode(), None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    lib.peat_op_family(op.encode(), buf, n + 1)
    return buf.value.decode()


def op_context(aten_op: str, input_shapes=(), output: int = 0, attrs=None,
               signature_k: int = 0) -> tuple:
    """(op kind name, reduction length K) of output `output` of a call of
    `aten_op` with these input shapes (the tensor arguments in recorded order)
    and attributes: the library's one rule (peat_detect_context_infer;
    docs/error-models.md, "Op contexts"). A kind that needs K and has none
    is "unknown" unless signature_k > 0."""
    from .profiler import _attrs as attr_array
    shapes = [tuple(int(v) for v in s) for s in input_shapes]
    n = len(shapes)
    ndims = (ctypes.c_int32 * max(n, 1))(*[len(s) for s in shapes])
    rows = [(ctypes.c_int64 * max(len(s), 1))(*s) for s in shapes]
    ptrs = (ctypes.POINTER(ctypes.c_int64) * max(n, 1))(
        *[ctypes.cast(r, ctypes.POINTER(ctypes.c_int64)) for r in rows])
    attrs = dict(attrs or {})
    arr, _keep = attr_array(attrs) if attrs else (None, [])
    ctx = _capi.DetectContext()
    lib.peat_detect_context_init(byref(ctx))
    check(lib.peat_detect_context_infer(byref(ctx), aten_op.encode(), n, ndims, ptrs, arr,
                                        len(attrs), output, signature_k),
          "peat_detect_context_infer")
    return op_kind_name(ctx.op_kind), ctx.reduction_length


def op_kind_of(aten_op: str, output: int = 0, attrs=None) -> str:
    """The Detector's op kind of output `output` of an op by its name alone
    ("fc/aten::addmm" -> "gemm"; the K it needs comes from elsewhere, e.g.
    the signature); `attrs` are the record's attributes (they say which
    gradients a convolution_backward record holds). See op_context."""
    return op_context(aten_op, (), output, attrs, signature_k=1)[0]


def reduction_length_of(aten_op: str, input_shapes, output: int = 0, attrs=None) -> int:
    """The reduction length K of output `output` of an op call from its input
    shapes and attributes; 0 when unknown. See op_context."""
    return op_context(aten_op, input_shapes, output, attrs)[1]


@dataclasses.dataclass
class Verdict:
    """One ranked verdict (peat_verdict_t). Parameters that do not apply are
    -1 (integers) or 0.0 (alpha, effective_mantissa_bits); nearest_format is
    "none" when it does not apply."""
    model: str
    model_code: int
    confidence: float
    bit: int
    polarity: int
    lane_period: int
    lane: int
    effective_mantissa_bits: float
    nearest_format: str
    alpha: float
    rows_affected: int
    cols_affected: int
    tiles_affected: int
    elements: int
    first_index: int
    evidence: list

    @classmethod
    def from_struct(cls, v: _capi.Verdict) -> "Verdict":
        from .injector import error_model_name
        evidence = [v.evidence[i].value.decode("utf-8", "replace")
                    for i in range(max(0, min(v.evidence_count, _capi.DETECT_EVIDENCE_LINES)))]
        return cls(error_model_name(v.model), v.model, v.confidence, v.bit, v.polarity,
                   v.lane_period, v.lane, v.effective_mantissa_bits,
                   float_format_name(v.nearest_format), v.alpha, v.rows_affected,
                   v.cols_affected, v.tiles_affected, v.elements, v.first_index, evidence)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Detection:
    """The result of peat.detect: verdicts ranked most specific first."""
    elements: int
    mismatches: int
    verdicts: list
    raw: _capi.Detection = dataclasses.field(repr=False, compare=False)

    @property
    def top(self) -> Verdict:
        """The first (most specific) verdict."""
        return self.verdicts[0]

    @property
    def models(self) -> list:
        """The verdicts' model names, in rank order."""
        return [v.model for v in self.verdicts]

    def to_dict(self) -> dict:
        return {"elements": self.elements, "mismatches": self.mismatches,
                "verdicts": [v.to_dict() for v in self.verdicts]}

    def render(self, fmt: str = "text") -> str:
        """The library's rendering: "text" (an aligned table), "json" (with
        schema_version) or "csv" (peat_detection_render)."""
        code = RENDER_FORMATS[fmt]
        n = c_size_t()
        status = lib.peat_detection_render(byref(self.raw), code, None, 0, byref(n))
        if status != BufferTooSmallError.status:
            check(status, "peat_detection_render")
        buf = ctypes.create_string_buffer(n.value + 1)
        check(lib.peat_detection_render(byref(self.raw), code, buf, n.value + 1, byref(n)),
              "peat_detection_render")
        return buf.value.decode("utf-8", "replace")

    def __str__(self) -> str:
        return self.render("text")


def verdict_table(rows, *, title: str = "") -> str:
    """An aligned table of top verdicts, one line per (label, op name,
    Detection) in `rows`: the model, confidence, effective mantissa bits,
    nearest format, bit, elements / mismatches, and the first line of
    evidence."""
    lines = [title] if title else []
    lines.append(f"  {'candidate':24s} {'op':44s} {'verdict':18s} {'conf':>5s} {'bits':>5s} "
                 f"{'format':>6s} {'bit':>4s} {'mismatches':>16s}  evidence")
    for label, name, det in rows:
        v = det.top
        lines.append(f"  {label[:24]:24s} {name[:44]:44s} {v.model:18s} {v.confidence:5.2f} "
                     f"{v.effective_mantissa_bits:5.1f} {v.nearest_format:>6s} {v.bit:4d} "
                     f"{f'{det.mismatches}/{det.elements}':>16s}  "
                     f"{v.evidence[0] if v.evidence else ''}")
    return "\n".join(lines)


def _dtype(value):
    if value is None:
        return _capi.DLDataType(0, 0, 0)
    if isinstance(value, str):
        from . import dtype_from_name
        return dtype_from_name(value)
    return value


def detect(signature, *, op_kind: str | int = "unknown", reduction_length: int = 0,
           golden_dtype=None, candidate_dtype=None, unit_roundoff: float = 0.0,
           rounding_slack: float | None = None, spatial_map=None, rerun=None,
           reference=None, rerun_diff=None) -> Detection:
    """Names the error models behind `signature` (a peat.Signature).

    op_kind: "gemm", "conv", "reduction", "elementwise" or "unknown" (which
    rounding bound applies); reduction_length: K (0 = the signature's);
    golden_dtype/candidate_dtype: dtype names (None = the signature's);
    unit_roundoff: u of the op's arithmetic (0 = the signature's);
    rounding_slack: accepted multiple of the rounding bound (None = library
    default); spatial_map: the signature's peat.SpatialMap (REGION, lanes);
    rerun: signature of (golden, a second candidate run) (NONDETERMINISM);
    reference: signature of (float64 reference, golden);
    rerun_diff: signature of (candidate run 1, candidate run 2), the runs
    compared elementwise (any bitwise mismatch: NONDETERMINISM).
    Raises the status's exception (e.g. InvalidArgumentError for an empty
    signature) with the library's message."""
    ctx = _capi.DetectContext()
    lib.peat_detect_context_init(byref(ctx))
    ctx.op_kind = OP_KINDS[op_kind] if isinstance(op_kind, str) else int(op_kind)
    ctx.reduction_length = reduction_length
    ctx.golden_dtype, ctx.candidate_dtype = _dtype(golden_dtype), _dtype(candidate_dtype)
    ctx.unit_roundoff = unit_roundoff
    if rounding_slack is not None:
        ctx.rounding_slack = rounding_slack
    if spatial_map is not None:
        ctx.map = ctypes.pointer(spatial_map.raw)
    if rerun is not None:
        ctx.rerun = ctypes.pointer(rerun.raw)
    if reference is not None:
        ctx.reference = ctypes.pointer(reference.raw)
    if rerun_diff is not None:
        ctx.rerun_diff = ctypes.pointer(rerun_diff.raw)
    out = _capi.Detection()
    lib.peat_detection_init(byref(out))
    check(lib.peat_detect(byref(signature.raw), byref(ctx), byref(out)), "peat_detect")
    verdicts = [Verdict.from_struct(out.verdicts[i]) for i in range(out.verdict_count)]
    return Detection(out.elements, out.mismatches, verdicts, out)
