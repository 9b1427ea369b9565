"""peat.NoiseBand and peat.golden_reruns: the band from golden reruns, the
verdict with its effect size, first step beyond and parameter drift, and the
errors; figures computed here from the series themselves."""
import math

import pytest

import peat


def _smooth(v, w):
    out = []
    for i in range(len(v)):
        win = v[max(0, i + 1 - w):i + 1]
        out.append(sum(win) / len(win))
    return out


def test_band_rule_and_verdicts():
    ref = [2.0 - 0.05 * t for t in range(30)]
    reruns = [[x + 0.02 * math.sin(t + s) for t, x in enumerate(ref)] for s in (1, 2, 3)]
    band = peat.NoiseBand.from_runs([ref] + reruns, window=4)
    sr = _smooth(ref, 4)
    dev = max(max(abs(a - b) for a, b in zip(_smooth(r, 4)[3:], sr[3:])) for r in reruns)
    assert band.k == 3
    assert band.info()["factor"] == pytest.approx(1.5)
    assert band.band == pytest.approx(1.5 * dev)
    assert "k=3" in band.rule and "4-step moving average" in band.rule

    same = band.judge(ref)
    assert same.verdict == peat.INSIDE_NOISE and same.inside
    assert same.effect == 0 and same.first_beyond_step is None
    shifted = [x + 3 * band.band for x in ref[:20]] + ref[20:]
    far = band.judge(shifted, steps=list(range(100, 130)))
    assert far.verdict == peat.OUTSIDE_NOISE
    assert far.first_beyond_step == 103  # the first compared step (full window)
    assert far.effect == pytest.approx(3.0)
    assert "OUTSIDE_NOISE" in str(far)
    assert far.to_dict()["param_drift"] is None
    nan = band.judge(ref[:10] + [float("nan")] + ref[11:])
    assert nan.verdict == peat.OUTSIDE_NOISE and math.isinf(nan.effect)
    assert nan.to_dict()["effect"] == "inf"


def test_parameter_drift_normalised_by_golden_drift():
    np = pytest.importorskip("numpy")
    ref_p = {"w": np.ones(8, dtype=np.float32), "steps": np.array([3])}
    rerun_p = {"w": np.full(8, 1.01, dtype=np.float32), "steps": np.array([3])}
    cand_p = {"w": np.full(8, 1.05, dtype=np.float32), "steps": np.array([3])}
    drift = peat.param_drift(ref_p, rerun_p)
    assert drift == pytest.approx(float(np.float32(1.01)) - 1, rel=1e-6)
    ref = [1.0, 0.9, 0.8, 0.7]
    band = peat.NoiseBand.from_runs([ref, [1.0, 0.92, 0.81, 0.7]], params=[ref_p, rerun_p],
                                    window=1)
    assert band.info()["max_param_drift"] == pytest.approx(drift)
    impact = band.judge(ref, params=cand_p)
    assert impact.param_drift_ratio == pytest.approx(peat.param_drift(ref_p, cand_p) / drift)
    assert impact.param_drift_ratio == pytest.approx(5.0, rel=1e-3)
    with pytest.raises(ValueError, match="'w'"):
        peat.param_drift(ref_p, {"v": np.ones(8, dtype=np.float32)})


def test_golden_reruns_and_errors():
    seen = []

    def train(seed):
        seen.append(seed)
        return [1.0 / (t + 1) + 0.01 * seed for t in range(5)]

    runs = peat.golden_reruns(train, k=2, seed=10)
    assert seen == [11, 12] and len(runs) == 2
    with pytest.raises(ValueError, match="golden run's seed"):
        peat.golden_reruns(train, k=1, seeds=[0])
    with pytest.raises(ValueError, match="at least one rerun"):
        peat.NoiseBand.from_runs([train(0)])
    with pytest.raises(peat.InvalidArgumentError, match="window"):
        peat.NoiseBand([1.0, 2.0], window=0)
    with pytest.raises(peat.InvalidArgumentError, match=r"loss\[1\]"):
        peat.NoiseBand([1.0, 2.0]).add_rerun([1.0, float("inf")])
    with pytest.raises(peat.BadStateError):
        peat.NoiseBand([1.0, 2.0]).judge([1.0, 2.0])
