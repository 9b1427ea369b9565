"""The Detector from Python, and the smaller functions wrapped with it: spatial
maps over Python-owned buffers (shape, merge, accumulate), the rendering,
errors with the library's message, load_alloc."""
import json

import numpy as np
import pytest

import peat


def _gemm(rng, m=64, k=96, n=48):
    a = rng.random((m, k), dtype=np.float32)
    b = rng.random((k, n), dtype=np.float32)
    return a, b, a @ b


def test_detect_rounding_and_render_formats(rng):
    a, b, golden = _gemm(rng)
    cand = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    det = peat.detect(peat.analyze(golden, cand, reduction_length=96), op_kind="gemm")
    assert det.models[0] == "ROUNDING" and det.elements == golden.size
    assert det.top.effective_mantissa_bits > 18 and det.top.nearest_format == "none"
    as_json = json.loads(det.render("json"))
    assert as_json["schema_version"] == 1 and as_json["verdicts"][0]["model"] == "ROUNDING"
    assert json.loads(json.dumps(det.to_dict()))["verdicts"][0]["model"] == "ROUNDING"
    csv = det.render("csv").splitlines()
    assert len(csv) == 1 + len(det.verdicts) and "ROUNDING" in csv[1]
    assert "ROUNDING" in str(det)


def test_detect_region_uses_the_spatial_map(rng):
    _, _, golden = _gemm(rng)
    cand = golden.copy()
    cand[:, 40:] = 0.0  # the last 8 columns never written
    sig, smap = peat.analyze(golden, cand, spatial_map=True, reduction_length=96,
                             tile_rows=16, tile_cols=16)
    assert smap.col_counts[40:] == [64] * 8 and sum(smap.col_counts[:40]) == 0
    det = peat.detect(sig, op_kind="gemm", spatial_map=smap)
    models = det.models
    assert models[0] in ("REGION", "DROPPED_WRITES"), det.render()
    region = next(v for v in det.verdicts if v.model in ("REGION", "DROPPED_WRITES"))
    assert region.cols_affected == 8 and region.rows_affected == 64, region
    assert smap.to_dict()["mismatch_count"] == 64 * 8


def test_detect_nondeterminism_from_a_rerun(rng):
    a, b, golden = _gemm(rng)
    first = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    second = first.copy()
    second.reshape(-1)[::7] = np.nextafter(second.reshape(-1)[::7], np.float32(np.inf))
    sig = peat.analyze(golden, first, reduction_length=96)
    rerun = peat.analyze(golden, second, reduction_length=96)
    det = peat.detect(sig, op_kind="gemm", rerun=rerun)
    assert det.models[0] == "NONDETERMINISM", det.render()


def test_detect_errors_carry_the_message(rng):
    empty = peat.analyze(np.zeros(0, np.float32), np.zeros(0, np.float32))
    with pytest.raises(peat.InvalidArgumentError, match="count|empty"):
        peat.detect(empty)
    _, _, golden = _gemm(rng)
    sig = peat.analyze(golden, golden)
    with pytest.raises(peat.InvalidArgumentError, match="reduction_length|K"):
        peat.detect(sig, op_kind="gemm")  # no K anywhere
    assert "K" in peat.last_error_message() or "reduction" in peat.last_error_message()
    peat.clear_last_error()
    assert peat.last_error_message() == ""
    assert peat.detect(sig, op_kind="gemm", reduction_length=96).models == ["EXACT"]


def test_names_and_dtypes():
    assert peat.op_kind_name(1) == "gemm" and peat.op_kind_name(99) == "unknown"
    assert peat.float_format_name(0) == "bf16" and peat.float_format_name(-1) == "none"
    assert peat.action_name(2) == "run_both"
    assert peat.dtype_is_supported_float("bf16") and not peat.dtype_is_supported_float("i32")
    assert peat.op_kind_of("fc/aten::addmm") == "gemm"
    assert peat.op_kind_of("conv1/aten::convolution") == "conv"
    assert peat.reduction_length_of("aten::convolution", [(2, 3, 8, 8), (4, 3, 3, 3)]) == 27
    assert peat.reduction_length_of("aten::addmm", [(5,), (7, 11), (11, 5)]) == 11


def test_spatial_map_accumulate_and_merge(rng):
    _, _, golden = _gemm(rng)
    cand = golden.copy()
    cand[3, 5] *= 2
    cand[40, 7] *= 2
    whole, whole_map = peat.analyze(golden, cand, spatial_map=True)
    assert peat.spatial_map_shape(golden) == (64, 48, 2 * 2)  # 32 x 32 tiles
    # the same output analysed in two halves of 32 rows
    top, bottom = slice(0, 32), slice(32, 64)
    cfg = dict(spatial_rows=64, spatial_cols=48)
    smap = peat.empty_spatial_map(golden, **cfg)
    sig, smap = peat.analyze_accumulate(golden[top], cand[top], None, smap, index_base=0, **cfg)
    sig, smap = peat.analyze_accumulate(golden[bottom], cand[bottom], sig, smap,
                                        index_base=32 * 48, **cfg)
    assert sig.count == whole.count and sig.value_mismatch_count == 2
    assert smap.row_counts == whole_map.row_counts and smap.mismatch_count == 2
    # two maps of the two halves merged
    s1, m1 = peat.analyze_accumulate(golden[top], cand[top], None,
                                     peat.empty_spatial_map(golden, **cfg), index_base=0, **cfg)
    s2, m2 = peat.analyze_accumulate(golden[bottom], cand[bottom], None,
                                     peat.empty_spatial_map(golden, **cfg), index_base=32 * 48,
                                     **cfg)
    assert m1.mismatch_count == m2.mismatch_count == 1
    merged = m1.merge(m2)
    assert merged.row_counts == whole_map.row_counts and merged.col_counts == whole_map.col_counts
    assert s1.merge(s2).value_mismatch_count == 2


def test_load_alloc_is_library_memory(tmp_path, rng):
    x = rng.random((6, 5), dtype=np.float32)
    with peat.Session() as s, peat.Profiler(s, tmp_path / "t.peat") as prof:
        prof.record_op("aten::relu", inputs=[x], outputs=[np.maximum(x, 0)])
    with peat.TraceReader(tmp_path / "t.peat") as r:
        (rec,) = list(r.records(kinds="op"))
        arr = r.load_alloc(rec.index, "input", 0)
        assert np.array_equal(arr, x) and not arr.flags.owndata
        assert np.array_equal(r.load_alloc(rec.index, "output", 0), np.maximum(x, 0))
        del arr
        with pytest.raises(peat.NotFoundError):
            r.load_alloc(rec.index, "input", 3)


class _Producer:
    """A foreign DLPack producer (neither numpy nor torch) over an array's memory."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_dlpack_producers_are_viewed_without_copies(rng):
    x = rng.random((8, 6), dtype=np.float32)[:, ::2]  # strided
    v = peat.view(_Producer(x))
    assert v.dl.data == x.ctypes.data and tuple(v.dl.strides[:2]) == (6, 2)
    sig = peat.analyze(_Producer(x), x)
    assert sig.count == x.size and sig.bitwise_mismatch_count == 0
    with pytest.raises(TypeError):
        peat.view(object())


def test_detect_bf16_gemm_is_reduced_precision_with_7_to_8_bits(rng):
    torch = pytest.importorskip("torch")
    a, b, golden = _gemm(rng, 64, 128, 32)  # positive data: no cancellation
    cand = (torch.from_numpy(a).bfloat16() @ torch.from_numpy(b).bfloat16()).float().numpy()
    det = peat.detect(peat.analyze(golden, cand, reduction_length=128), op_kind="gemm")
    assert det.top.model == "REDUCED_PRECISION" and det.top.nearest_format == "bf16", det.render()
    assert 7.0 <= det.top.effective_mantissa_bits <= 8.0, det.top.effective_mantissa_bits
