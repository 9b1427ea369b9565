"""Training impact: does training care about a candidate kernel?

The run-to-run noise of the loss curve is measured from golden reruns (other
seed / batch order); a candidate run (the reference run repeated with the
candidate swapped in) is judged against it. The rule is the library's
(peat_noise_band_*, include/peat/analyzer.h):

    s_r(t) = trailing moving average of run r's loss over `window` steps;
    band   = factor x max over reruns of max_t |s_rerun(t) - s_ref(t)|,
             factor = widen, or 1 + 1.5 / k for k reruns;
    t runs from the first full window on; a candidate is OUTSIDE_NOISE when
    |s_c(t) - s_ref(t)| > band for `patience` consecutive steps.

    reruns = peat.golden_reruns(train, k=3)        # train(seed) -> losses
    band = peat.NoiseBand.from_runs([golden] + reruns, window=5)
    impact = band.judge(candidate_losses)
    print(band.rule, impact)   # INSIDE_NOISE, 0.31 band units, ...
"""
from __future__ import annotations

import ctypes
import dataclasses
import math
import random
import sys
from ctypes import byref, c_double, c_void_p

from . import _capi
from ._capi import lib
from ._handle import OwnsHandle
from .errors import check

INSIDE_NOISE = "INSIDE_NOISE"
OUTSIDE_NOISE = "OUTSIDE_NOISE"
_VERDICTS = {0: INSIDE_NOISE, 1: OUTSIDE_NOISE}


def _doubles(values, what: str):
    values = [float(v) for v in values]
    if not values:
        raise ValueError(f"peat: {what} is empty")
    return (c_double * len(values))(*values), len(values)


def _nan_or(x) -> float:
    return math.nan if x is None else float(x)


def _none_if_nan(x: float):
    return None if math.isnan(x) else x


def _is_float_tensor(v) -> bool:
    fp = getattr(v, "is_floating_point", None)  # torch
    if callable(fp):
        return bool(fp())
    dtype = getattr(v, "dtype", None)  # numpy and the like
    return getattr(dtype, "kind", "") == "f"


def param_drift(reference: dict, params: dict) -> float:
    """Relative L2 of all floating parameters of `params` against those of
    `reference` ({name: tensor}, e.g. two state dicts): sqrt(sum of squared
    differences / sum of squared reference values) over every tensor, from
    peat.compare_checkpoints. Non-floating tensors (step counters) are left
    out. Raises ValueError naming a tensor only one side has or one that
    cannot be compared."""
    from .analyzer import compare_checkpoints
    ref = {k: v for k, v in reference.items() if _is_float_tensor(v)}
    new = {k: v for k, v in params.items() if _is_float_tensor(v)}
    sigs = compare_checkpoints(ref, new)
    err = gold = 0.0
    for name, sig in sigs.items():
        if sig is None:
            raise ValueError(f"peat: parameter {name!r} is in only one of the two sets or "
                             "cannot be compared")
        sums = sig.sums
        err += sums["sum_sq_error"]
        gold += sums["sum_sq_golden"]
    if gold > 0:
        return math.sqrt(err / gold)
    return math.inf if err > 0 else 0.0


@dataclasses.dataclass(frozen=True)
class Impact:
    """The verdict on one candidate run (peat_impact_t)."""
    verdict: str                     # INSIDE_NOISE or OUTSIDE_NOISE
    effect: float                    # max deviation in band units (<= 1: inside)
    first_beyond_step: int | None    # first step beyond the band (None: never)
    param_drift_ratio: float | None  # parameter drift / largest golden-vs-golden drift
    max_deviation: float             # max |smoothed loss - smoothed reference| (loss units)
    max_deviation_step: int
    beyond_count: int                # compared steps beyond the band
    steps: int                       # compared steps
    final_delta: float               # smoothed loss - reference at the last compared step
    param_drift: float | None        # the candidate's parameter drift (None: not given)
    band: float                      # the band (loss units)

    @property
    def inside(self) -> bool:
        return self.verdict == INSIDE_NOISE

    def to_dict(self) -> dict:
        def j(x):
            return x if not isinstance(x, float) or math.isfinite(x) else str(x)
        return {k: j(v) for k, v in dataclasses.asdict(self).items()}

    def __str__(self) -> str:
        s = f"{self.verdict}, {self.effect:.3g} band units"
        if self.first_beyond_step is not None:
            s += f", first beyond the band at step {self.first_beyond_step}"
        if self.param_drift_ratio is not None:
            s += f", parameter drift {self.param_drift_ratio:.3g} x golden-vs-golden"
        return s


class NoiseBand(OwnsHandle):
    """The run-to-run noise band of a training loss curve (peat_noise_band_t)."""

    _h = None

    def __init__(self, reference, *, window: int = 20, widen: float | None = None,
                 patience: int = 1, reference_params: dict | None = None):
        opts = _capi.NoiseBandOptions()
        lib.peat_noise_band_options_init(byref(opts))
        opts.window, opts.patience = window, patience
        opts.widen = 0.0 if widen is None else widen
        arr, n = _doubles(reference, "the reference loss series")
        handle = c_void_p()
        check(lib.peat_noise_band_create(arr, n, byref(opts), byref(handle)),
              "peat_noise_band_create")
        self._h = handle
        self.reference_params = reference_params

    @classmethod
    def from_runs(cls, loss_series, *, params=None, window: int = 20,
                  widen: float | None = None, patience: int = 1) -> "NoiseBand":
        """A band from golden runs: loss_series[0] is the reference run (the
        one candidates repeat: same seed and batch order), loss_series[1:]
        the k >= 1 reruns with other seeds / batch orders. params, when given,
        are the runs' final parameters ({name: tensor}, parallel to
        loss_series): the golden-vs-golden drift is each rerun's param_drift
        against the reference's. widen None: 1 + 1.5 / k."""
        runs = list(loss_series)
        if len(runs) < 2:
            raise ValueError("peat: NoiseBand.from_runs needs the reference run and at least "
                             f"one rerun (got {len(runs)} series)")
        if params is not None and len(params) != len(runs):
            raise ValueError(f"peat: {len(params)} parameter sets for {len(runs)} loss series")
        band = cls(runs[0], window=window, widen=widen, patience=patience,
                   reference_params=None if params is None else params[0])
        for i, run in enumerate(runs[1:], 1):
            band.add_rerun(run, params=None if params is None else params[i])
        return band

    def close(self) -> None:
        if self._h:
            lib.peat_noise_band_destroy(self._h)
            self._h = c_void_p()

    def _drift(self, params, drift):
        if params is not None:
            if self.reference_params is None:
                raise ValueError("peat: parameters given, but the band has no reference "
                                 "parameters")
            return param_drift(self.reference_params, params)
        return _nan_or(drift)

    def add_rerun(self, loss, *, params: dict | None = None, drift: float | None = None) -> None:
        """Adds a golden rerun (other seed / batch order) and its final
        parameters (or its drift against the reference, a number)."""
        arr, n = _doubles(loss, "the rerun's loss series")
        check(lib.peat_noise_band_add_rerun(self._h, arr, n, self._drift(params, drift)),
              "peat_noise_band_add_rerun")

    def info(self) -> dict:
        out = _capi.NoiseBandInfo()
        out.struct_size = ctypes.sizeof(out)
        check(lib.peat_noise_band_info(self._h, byref(out)), "peat_noise_band_info")
        return {f[0]: getattr(out, f[0]) for f in out._fields_ if f[0] != "struct_size"}

    @property
    def k(self) -> int:
        return self.info()["reruns"]

    @property
    def band(self) -> float:
        return self.info()["band"]

    @property
    def rule(self) -> str:
        """The rule in words, with k, the factor, the window and the band."""
        i = self.info()
        return (f"noise band {i['band']:.4g} = {i['factor']:.3g} x the largest deviation "
                f"({i['max_deviation']:.4g}) of k={i['reruns']} golden reruns (other seed / "
                f"batch order) from the golden run, {i['window']}-step moving average, from "
                f"the first full window; outside after {i['patience']} step(s) beyond it")

    def judge(self, series, *, params: dict | None = None, drift: float | None = None,
              steps=None) -> Impact:
        """The impact verdict on a candidate run's loss series (the reference
        run repeated with the candidate). params: its final parameters (the
        drift is then normalised by the golden-vs-golden drift); steps: step
        numbers to report instead of indices."""
        arr, n = _doubles(series, "the candidate's loss series")
        st = None
        if steps is not None:
            if len(steps) != n:
                raise ValueError(f"peat: {len(steps)} steps for {n} losses")
            st = (ctypes.c_int64 * n)(*steps)
        out = _capi.Impact()
        out.struct_size = ctypes.sizeof(out)
        check(lib.peat_noise_band_judge(self._h, arr, n, st, self._drift(params, drift),
                                        byref(out)), "peat_noise_band_judge")
        return Impact(verdict=_VERDICTS.get(out.verdict, str(out.verdict)), effect=out.effect,
                      first_beyond_step=None if out.first_beyond_step < 0
                      else out.first_beyond_step,
                      param_drift_ratio=_none_if_nan(out.param_drift_ratio),
                      max_deviation=out.max_deviation, max_deviation_step=out.max_deviation_step,
                      beyond_count=out.beyond_count, steps=out.steps, final_delta=out.final_delta,
                      param_drift=_none_if_nan(out.param_drift), band=self.band)


def seed_everything(seed: int) -> None:
    """Seeds Python's random, and numpy's and torch's global generators when
    those are imported."""
    random.seed(seed)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(seed % 2**32)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


def golden_reruns(train_fn, k: int = 3, *, seed: int = 0, seeds=None) -> list:
    """Runs k golden reruns of a training function: train_fn(s) for seeds s
    (default seed + 1 .. seed + k, the golden run being train_fn(seed)), each
    after seed_everything(s). train_fn should also draw its batch order from
    s. Returns the k results in order (e.g. loss lists, or (losses, params)
    pairs) for NoiseBand.from_runs([golden] + reruns)."""
    seeds = list(seeds) if seeds is not None else [seed + i for i in range(1, k + 1)]
    if len(seeds) != k or k < 1:
        raise ValueError(f"peat: golden_reruns needs k >= 1 seeds (k={k}, {len(seeds)} seeds)")
    if seed in seeds:
        raise ValueError(f"peat: rerun seed {seed} is the golden run's seed")
    out = []
    for s in seeds:
        seed_everything(s)
        out.append(train_fn(s))
    return out
