"""The ctypes package over the C ABI: every wrapped object, tensors in from numpy
and torch (contiguous and strided, no copies), statuses as exceptions."""
import ctypes
import json
import math

import numpy as np
import pytest

import peat
from peat import _capi


def test_versions_and_struct_sizes():
    assert peat.version_number() == _capi.EXPECTED_VERSION_NUMBER == 200
    assert peat.abi_version() == 0
    assert peat.version() == "0.2.0"
    for struct, init, extra in _capi._SIZE_CHECKS:
        s = struct()
        getattr(_capi.lib, init)(ctypes.byref(s), *extra)
        assert s.struct_size == ctypes.sizeof(struct), struct.__name__


def test_dtype_helpers():
    assert peat.dtype_name("bfloat16") == "bf16"
    assert peat.dtype_size("f64") == 8
    assert peat.mantissa_bits("bf16") == (7, 2.0 ** -8)
    assert peat.mantissa_bits("f32") == (23, 2.0 ** -24)
    with pytest.raises(peat.InvalidArgumentError, match="f128|name"):
        peat.dtype_from_name("f128")


def test_error_classes_one_per_status():
    for status in range(1, 16):
        cls = peat.error_class(status)
        assert issubclass(cls, peat.PeatError) and cls.status == status
    assert len({peat.error_class(s) for s in range(1, 16)}) == 15
    assert peat.status_string(7) == "not found"


def test_session_round_trip(session):
    assert session.seed == 7 and session.backend == "cpu"
    mm = session.intern("aten::mm")
    conv = session.intern("conv1/aten::convolution")
    assert (mm, conv) == (0, 1) and session.intern("aten::mm") == 0
    assert session.op_name(conv) == "conv1/aten::convolution" and session.op_count == 2
    assert [session.next_call(mm) for _ in range(3)] == [0, 1, 2]
    assert session.call_count(mm) == 3 and session.call_count(conv) == 0
    session.step = 12
    session.phase = "backward"
    assert session.step == 12 and session.phase == "backward"
    session.log("hello", "warning")
    assert ("warning", "hello") in session.logs()


def test_errors_carry_the_library_message(session):
    with pytest.raises(peat.InvalidArgumentError) as e:
        peat.Session(world_size=0)
    assert "world_size" in str(e.value) and e.value.status == 1
    with pytest.raises(peat.InvalidArgumentError) as e:
        session.intern("")
    assert str(e.value)
    with pytest.raises(peat.NotFoundError) as e:
        session.op_name(999)
    assert "999" in str(e.value)
    with pytest.raises(peat.NotFoundError) as e:
        peat.TraceReader("/nonexistent/dir/x.peat")
    assert "/nonexistent/dir/x.peat" in e.value.message
    with pytest.raises(ValueError):  # phase names are checked in Python
        session.phase = "sideways"
    with pytest.raises(TypeError):
        peat.analyze([1.0], [1.0])


def test_closed_session_raises():
    s = peat.Session()
    s.close()
    with pytest.raises(peat.BadStateError):
        s.intern("x")


def _reference_max_rel(g, c):
    g64, c64 = g.astype(np.float64), c.astype(np.float64)
    nz = g64 != 0
    return float(np.max(np.abs(c64[nz] - g64[nz]) / np.abs(g64[nz])))


def test_numpy_contiguous_and_strided(rng):
    g = rng.standard_normal((16, 24)).astype(np.float32)
    c = (g * (1 + rng.uniform(-1e-3, 1e-3, g.shape))).astype(np.float32)
    full = peat.analyze(g, c)
    assert full.count == g.size and full.golden_dtype == "f32"
    assert full.max_rel_error == pytest.approx(_reference_max_rel(g, c), rel=1e-12)
    # A strided (every 2nd column, reversed rows) view equals its compact copy.
    gs, cs = g[::-1, ::2], c[::-1, ::2]
    strided = peat.analyze(gs, cs)
    compact = peat.analyze(np.ascontiguousarray(gs), np.ascontiguousarray(cs))
    assert strided.count == gs.size == compact.count
    assert strided.max_abs_error == compact.max_abs_error
    assert strided.max_abs_error_index == compact.max_abs_error_index
    assert strided.ulp_hist == compact.ulp_hist
    assert peat.numel(gs) == gs.size


def test_exact_sums_and_ratio_moments():
    g = np.array([1, 2, 3, 4], dtype=np.float64)
    c = np.array([1, 2, 3, 5], dtype=np.float64)
    sums = peat.analyze(g, c).sums
    assert sums["sum_error"] == 1.0 and sums["sum_sq_error"] == 1.0
    assert sums["sum_sq_golden"] == 30.0 and sums["sum_golden_candidate"] == 34.0
    assert sums["ratio_mean"] == 1.0625  # (1 + 1 + 1 + 1.25) / 4
    assert sums["ratio_m2"] == pytest.approx(0.046875, rel=1e-15)  # sum of (r - mean)^2
    # Cancellation a float64 sum loses: the exact sum keeps the 1.
    big = np.array([0.0, 0.0, 0.0])
    sig = peat.analyze(big, np.array([1e300, 1.0, -1e300]))
    assert sig.sums["sum_error"] == 1.0
    assert sig.exact_sum("sum_error") == 1.0 and sig.exact_sum("sum_abs_error") == 2e300
    assert sig.exact_sum("ratio_dev_sum") == 0.0  # no pair has a usable ratio (g = 0)
    with pytest.raises(ValueError):
        sig.exact_sum("count")


def test_views_are_zero_copy_numpy(rng):
    a = np.zeros((4, 6), np.float32)
    v = a[:, ::2]  # 4 x 3 view, strides (6, 2) elements
    truth = peat.inject(peat.InjectSpec("value", value_kind="constant", value=5.0, elements=[4]), v)
    assert truth.changed == 1
    # logical index 4 of the 4 x 3 view is row 1, column 1 -> a[1, 2]
    assert a[1, 2] == 5.0 and np.count_nonzero(a) == 1


def test_torch_tensors_contiguous_strided_and_dtypes():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    x = torch.randn(32, 48)
    sig = peat.analyze(x.t(), x.t().contiguous())  # transposed view vs copy
    assert sig.count == x.numel() and sig.bitwise_mismatch_count == 0
    for dtype, bits in ((torch.float16, 10), (torch.bfloat16, 7), (torch.float64, 52)):
        s = peat.analyze(x.to(dtype), x.to(dtype).clone())
        assert s.golden_dtype == {10: "f16", 7: "bf16", 52: "f64"}[bits]
        assert s.mantissa_bits == bits
    # bf16 candidate against an f32 golden: relative errors below 2^-8.
    s = peat.analyze(x, x.to(torch.bfloat16))
    assert s.candidate_dtype == "bf16" and 0 < s.max_rel_error <= 2.0 ** -8
    # zero copy: an injection into a strided torch view lands in the base tensor
    base = torch.zeros(6, 4, dtype=torch.float64)
    peat.inject(peat.InjectSpec("value", value_kind="constant", value=3.0, elements=[5]),
                base.t())  # 4 x 6 view: index 5 is row 0, column 5 -> base[5, 0]
    assert base[5, 0].item() == 3.0 and int(base.count_nonzero()) == 1


def test_signature_dataclass_and_json(rng):
    g = rng.uniform(1, 2, 1000)
    c = g * (1 + 2.0 ** -20)
    sig = peat.analyze(g, c, reduction_length=100)
    d = sig.to_dict()
    assert json.loads(json.dumps(d))["count"] == 1000
    assert d["rmse"] == pytest.approx(math.sqrt(np.mean((c - g) ** 2)), rel=1e-9)
    assert sig.sqnr_db > 100 and sig.cosine == pytest.approx(1.0)
    assert not sig.allclose  # f64 rtol 1e-7 < 2^-20
    det, prob = sig.rounding_bound_ratio
    assert det > 0 and prob > 0
    merged = sig.merge(sig)
    assert merged.count == 2000 and merged.max_abs_error == sig.max_abs_error
    same = peat.analyze(g, g)
    assert json.loads(json.dumps(same.to_dict()))["sqnr_db"] == "inf"


def test_spatial_map(rng):
    g = np.ones((8, 8), np.float32)
    c = g.copy()
    c[3, :] = 2.0
    sig, m = peat.analyze(g, c, spatial_map=True, tile_rows=4, tile_cols=4)
    assert sig.tolerance_fail_count == 8 and m.mismatch_count == 8
    assert m.row_counts == [0, 0, 0, 8, 0, 0, 0, 0] and m.col_counts == [1] * 8
    assert m.tile_counts == [4, 4, 0, 0] and m.longest_run == 8 and m.first_mismatch == 24


def test_aggregator_and_loss_comparison(rng):
    g = rng.standard_normal(100)
    with peat.Aggregator() as agg:
        for call in range(5):
            agg.add(3, call // 2, call, peat.analyze(g, g * (1 + 1e-6 * call)))
        assert agg.call_count(3) == 5 and agg.signature(3).count == 500
        series = agg.series(3)
        assert [p.call for p in series] == [0, 1, 2, 3, 4] and series[0].max_abs_error == 0
    cmp = peat.compare_loss([1.0, 0.9, 0.8], [1.0, 0.9, 2.0], band_rel=0.1)
    assert cmp["first_beyond_step"] == 2 and cmp["beyond_count"] == 1
    assert cmp["final_delta"] == pytest.approx(1.2)


def test_inject_exponent_bit_flip_changes_one_element(rng):
    x = rng.standard_normal((32, 32)).astype(np.float32)
    orig = x.copy()
    truth = peat.inject(peat.InjectSpec("bitflip", field="exponent", count=1), x, seed=5, op=1)
    assert truth.changed == 1 and truth.model == "BITFLIP_SINGLE"
    assert np.count_nonzero(x.view(np.uint32) != orig.view(np.uint32)) == 1
    (index, old_bits, new_bits, _, _), = truth.changes
    flipped = old_bits ^ new_bits
    assert bin(flipped).count("1") == 1 and 23 <= flipped.bit_length() - 1 <= 30
    assert x.reshape(-1)[index].view(np.uint32) == new_bits
    sig = peat.analyze(orig, x)
    assert sig.bitwise_mismatch_count == 1 and sig.xor_popcount_hist[1] == 1
    # The flipped bit is the pair's highest differing bit; the candidate has
    # it set exactly when the flip set it.
    top = flipped.bit_length() - 1
    assert sig.xor_top_bit_hist[top] == 1 and sum(sig.xor_top_bit_hist) == 1
    assert sig.xor_top_bit_set_hist[top] == (1 if new_bits & flipped else 0)
    assert sum(sig.xor_top_bit_set_hist) == sig.xor_top_bit_set_hist[top]
    assert sig.to_dict()["xor_top_bit_hist"] == sig.xor_top_bit_hist
    assert peat.round_value(1.0 + 2.0 ** -9, "bf16") == 1.0


def test_injector_schedule_and_dispatch(session, tmp_path):
    with peat.Injector(session) as inj:
        op = session.intern("gemm")
        inj.add_policy("gemm", "run_both", every_n=3)
        actions = [inj.decide(op)[0] for _ in range(30)]
        assert actions.count("run_both") == 10 and actions[0] == "run_both"
        assert inj.decide_call(op, 33) == "run_both"
        inj.clear_policies()
        spec = peat.InjectSpec("bitflip", bit=30, elements=[2])
        p = inj.add_policy("gemm", "inject", spec=spec, first_calls=1000)
        action, call, policy = inj.decide_policy(op)
        assert (action, policy) == ("inject", p)
        y = np.ones(4, np.float32)
        truth = inj.inject(policy, op, call, y)
        assert truth.changed == 1 and y[2] != 1.0 and np.count_nonzero(y != 1.0) == 1

        # dispatch with Python kernels: golden doubles, candidate adds a small error
        inj.clear_policies()
        inj.add_policy("axpy", "run_both", every_n=2)

        def golden(ins, outs):
            outs[0][...] = 2 * ins[0]

        inj.set_candidate("axpy", lambda ins, outs: outs[0].__setitem__(..., 2 * ins[0] + 1e-3))
        x = np.arange(8, dtype=np.float32)
        for _ in range(4):
            out = np.zeros(8, np.float32)
            action, call = inj.dispatch("axpy", [x], [out], golden)
            assert np.array_equal(out, 2 * x)  # golden propagates in run_both
        assert inj.firing_count() == (2, 0)
        f = inj.firing(0)
        assert f.op_name == "axpy" and f.action == "run_both" and f.compared
        assert f.elements == 8 and f.max_abs_error == pytest.approx(1e-3, rel=1e-3)
        assert inj.firing_signature(1).count == 8
        inj.write_log(tmp_path / "log.jsonl")
        lines = (tmp_path / "log.jsonl").read_text().splitlines()
        assert len(lines) == 2 and json.loads(lines[0])["op_name"] == "axpy"
        with pytest.raises(peat.NotFoundError):
            inj.set_candidate_symbol("axpy", "/nonexistent/libx.so:fn")
        with pytest.raises(peat.InvalidArgumentError):
            inj.add_policy("x", "run_both", every_n=0)

        # run_twice: a candidate whose second run swaps two results (the same
        # values, so no signature against the golden can tell) is
        # non-deterministic by its own outputs
        inj.clear_policies()
        inj.add_policy("axpy", "run_both", run_twice=True)
        runs = []

        def swapping(ins, outs):
            y = 2 * ins[0]
            if len(runs) % 2:
                y[[2, 3]] = y[[3, 2]]
            runs.append(1)
            outs[0][...] = y

        inj.set_candidate("axpy", swapping)
        out = np.zeros(8, np.float32)
        inj.dispatch("axpy", [x], [out], golden)
        f = inj.firing(2)
        assert len(runs) == 2 and f.mismatches == 0 and f.rerun_mismatches == 2
        rerun = inj.firing_rerun_signature(2)
        assert rerun.bitwise_mismatch_count == 2
        d = peat.detect(inj.firing_signature(2), rerun_diff=rerun)
        assert d.verdicts[0].model == "NONDETERMINISM"
        assert inj.firing(0).rerun_mismatches == -1
        with pytest.raises(peat.NotFoundError):
            inj.firing_rerun_signature(0)


def test_profiler_and_trace_reader_round_trip(session, tmp_path, rng):
    path = tmp_path / "t.peat"
    a = rng.standard_normal((5, 7)).astype(np.float32)
    b = rng.standard_normal((7, 3)).astype(np.float64)
    with peat.Profiler(session, path, framework="pytest", tags={"model": "tiny"}) as prof:
        prof.add_rule("skip*", record=False)
        prof.add_rule("aten::*", every_n=2, count_by="call")
        assert prof.should_record("aten::mm", 0) and not prof.should_record("aten::mm", 1)
        prof.mark_step(3)
        for _ in range(3):
            prof.record_op("aten::mm", inputs={"a": a, "b": b[:, ::2]}, outputs=[a.T],
                           module_path="fc1", phase="backward", attrs={"k": 7, "alpha": 0.5,
                                                                       "how": "nn",
                                                                       "stride": [2, 1]})
        assert prof.record_op("skip_me", outputs=[a]) == (False, 0)
        prof.record_checkpoint("ckpt", {"w": a}, step=3)
        prof.record_scalar("loss", 0.25)
        prof.flush()
        stats = prof.stats()
        assert stats["records_written"] == 5 and stats["not_sampled"] == 2
    with peat.TraceReader(path) as r:
        info = r.run_info()
        assert info["framework"] == "pytest" and info["run_name"] == "pytest"
        assert r.tags() == {"model": "tiny"}
        assert len(r) == 5
        ops = list(r.records(kinds="op"))
        assert [o.call_index for o in ops] == [0, 2] and ops[0].phase == "backward"
        assert ops[0].module_path == "fc1" and ops[0].step == 3
        assert r.attrs(ops[0].index) == {"k": 7, "alpha": 0.5, "how": "nn", "stride": [2, 1]}
        ti = r.tensor_info(ops[0].index, "input", 1)
        assert ti.name == "b" and ti.dtype == "f64" and ti.shape == (7, 2)
        assert np.array_equal(r.load(ops[0].index, "input", 1), b[:, ::2])
        assert np.array_equal(r.load(ops[0].index, "output", 0), a.T)
        (ck,) = r.records(kinds="checkpoint")
        assert np.array_equal(r.load(ck.index, "checkpoint", 0), a)
        (sc,) = r.records(kinds=["scalar"], op_glob="lo*")
        assert sc.value == 0.25 and sc.step == 3
        assert r.verify() == 2 * 3 + 1
    with peat.TraceReader(path, recover=True) as r:
        assert r.recovery["complete"] and r.recovery["records"] == 5


def test_backend_registry():
    cpu = peat.Backend.get("cpu")
    assert cpu.name == "cpu" and cpu.path == "" and cpu.device_count == 1
    dev = cpu.device(0)
    assert dev.device_type == 1 and dev.compute_units >= 1 and dev.total_memory_bytes > 0
    assert peat.Backend.for_device(1).name == "cpu"
    with pytest.raises(peat.InvalidArgumentError):
        cpu.device(5)
    with pytest.raises(peat.UnavailableError) as e:
        peat.Backend.get("nosuchbackend")
    assert "nosuchbackend" in str(e.value)


def test_compare_checkpoints(rng):
    w = rng.standard_normal((4, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    out = peat.compare_checkpoints({"w": w, "b": b}, {"w": w * 2, "b": b, "extra": b})
    assert set(out) == {"w", "b", "extra"} and out["extra"] is None
    assert out["b"].bitwise_mismatch_count == 0 and out["w"].count == 16
    assert out["w"].max_abs_error == pytest.approx(float(np.max(np.abs(w))))


def test_library_lookup_honours_peat_library():
    import os
    import subprocess
    import sys
    env = dict(os.environ, PEAT_LIBRARY="/nonexistent/libpeat.so")
    r = subprocess.run([sys.executable, "-c", "import peat"], env=env, capture_output=True,
                       text=True)
    assert r.returncode != 0 and "LibraryNotFound" in r.stderr
    assert "/nonexistent/libpeat.so" in r.stderr


def test_session_logs_since_a_mark_survive_dropped_entries():
    with peat.Session(max_log_entries=4) as s:
        s.log("a")
        mark = s.log_mark()
        for m in ("b", "c", "d", "e", "f"):
            s.log(m)  # "a" and "b" are dropped: 4 kept
        assert [m for _, m in s.logs()] == ["c", "d", "e", "f"]
        assert [m for _, m in s.logs(since=mark)] == ["c", "d", "e", "f"]
        later = s.log_mark()
        s.log("g", "warning")
        assert s.logs(since=later) == [("warning", "g")]
        assert s.log_mark() == later + 1
