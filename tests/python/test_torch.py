"""peat.torch: the dispatch mode on real torch ops and a short real training run."""
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

import peat  # noqa: E402
import peat.torch as pt  # noqa: E402

STEPS = 3


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def _digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.tensor(d.images[:256] / 16.0, dtype=torch.float32).unsqueeze(1)
    return x, torch.tensor(d.target[:256])


@pytest.fixture(scope="module")
def training_run(tmp_path_factory):
    """A short real training run (load_digits, SGD) under the dispatch mode,
    recording every op call and the loss, with run_both on the classifier's
    addmm (bf16 candidate) every 2nd call."""
    torch.manual_seed(0)
    x, y = _digits()
    model = TinyCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    path = tmp_path_factory.mktemp("trace") / "train.peat"
    losses = []
    with peat.Session(seed=11, run_name="digits") as s:
        with peat.Profiler(s, path, framework=f"pytorch {torch.__version__}") as prof:
            mode = pt.PeatMode(s, model=model, profiler=prof)
            mode.set_candidate("fc/aten::addmm", pt.autocast_candidate(torch.bfloat16))
            mode.injector.add_policy("fc/aten::addmm", "run_both", every_n=2)
            with mode:
                for step in range(STEPS):
                    mode.set_step(step)
                    xb, yb = x[step * 64:(step + 1) * 64], y[step * 64:(step + 1) * 64]
                    loss = F.cross_entropy(model(xb), yb)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    prof.record_scalar("loss", loss.item())
                    losses.append(loss.item())
            sigs = mode.signatures()
            firings = list(mode.firings)
            mode.close()
    return {"path": path, "losses": losses, "signatures": sigs, "firings": firings}


def test_training_run_records_a_readable_trace(training_run):
    with peat.TraceReader(training_run["path"]) as r:
        assert r.run_info()["run_name"] == "digits"
        ops = list(r.records(kinds="op"))
        names = {(o.name, o.phase) for o in ops}
        # forward and backward ops of each layer, named with the module path
        for expected in [("conv1/aten::convolution", "forward"),
                         ("conv2/aten::convolution", "forward"),
                         ("fc/aten::addmm", "forward"),
                         ("conv2/aten::convolution_backward", "backward"),
                         ("conv1/aten::convolution_backward", "backward"),
                         ("fc/aten::mm", "backward")]:
            assert expected in names, (expected, sorted(names))
        conv = [o for o in ops if o.name == "conv1/aten::convolution"]
        assert [o.call_index for o in conv] == list(range(STEPS))
        assert [o.step for o in conv] == list(range(STEPS))
        assert conv[0].module_path == "conv1"
        # the recorded output is what the convolution of the recorded inputs gives
        xin = torch.from_numpy(r.load(conv[1].index, "input", 0))
        w = torch.from_numpy(r.load(conv[1].index, "input", 1))
        b = torch.from_numpy(r.load(conv[1].index, "input", 2))
        out = torch.from_numpy(r.load(conv[1].index, "output", 0))
        assert torch.allclose(F.conv2d(xin, w, b, padding=1), out, atol=1e-6)
        assert r.attrs(conv[0].index)["arg4"] == [1, 1]  # padding
        losses = [rec.value for rec in r.records(kinds="scalar", op_glob="loss")]
        assert losses == pytest.approx(training_run["losses"])
        assert r.verify() > 0
    assert all(math_isfinite(v) for v in training_run["losses"])


def test_training_run_stores_each_tensor_once(training_run):
    """Trace format 1.2: the backward convolution's input is the forward's
    bytes again (64x1x8x8 f32, 16 KiB); the trace holds them once, as a
    reference that loads as the forward's tensor. Its weight (288 bytes) is
    below the 4 KiB from which tensors are addressed: stored again."""
    with peat.TraceReader(training_run["path"]) as r:
        ops = list(r.records(kinds="op"))
        fwd = [o for o in ops if o.name == "conv1/aten::convolution"]
        bwd = [o for o in ops if o.name == "conv1/aten::convolution_backward"]
        assert len(fwd) == len(bwd) == STEPS
        for f, b in zip(fwd, bwd):
            names = [r.tensor_info(b.index, "input", t).name for t in range(r.tensor_count(b.index, "input"))]
            t = names.index("input")
            info = r.tensor_info(b.index, "input", t)
            assert info.reference is not None and info.encoded_bytes == 0, info
            assert info.reference[:2] == ("input", 0)
            assert (r.load(b.index, "input", t) == r.load(f.index, "input", 0)).all()
            assert info.checksum == r.tensor_info(f.index, "input", 0).checksum
            assert r.tensor_info(b.index, "input", names.index("weight")).reference is None


def math_isfinite(v):
    return v == v and abs(v) != float("inf")


def test_training_run_fi_signatures(training_run):
    firings = training_run["firings"]
    # run_both every 2nd call of fc's addmm over STEPS forward calls
    assert [f["call"] for f in firings] == [c for c in range(STEPS) if c % 2 == 0]
    sig = training_run["signatures"]["fc/aten::addmm"]
    assert sig.count == 64 * 10 * len(firings) and sig.golden_dtype == "f32"
    assert sig.reduction_length == 128 and 0 < sig.max_abs_error < 0.1
    assert 2 < sig.effective_mantissa_bits(0.5) <= 9


def _mm_run(policy_kwargs, candidate, a, b, calls=1):
    with peat.Session(seed=3) as s:
        mode = pt.PeatMode(s)
        mode.set_candidate("aten::mm", candidate)
        mode.injector.add_policy("aten::mm", **policy_kwargs)
        outs = []
        with mode:
            for _ in range(calls):
                outs.append(a @ b)
        sigs, firings = mode.signatures(), list(mode.firings)
        mode.close()
    return outs, sigs, firings


def test_float64_mm_against_fp32_golden_is_rounding_level():
    torch.manual_seed(1)
    # signed data: the per-element bound can be exceeded where the dot product
    # cancels, the probabilistic (relative L2) one holds
    a, b = torch.randn(64, 256), torch.randn(256, 48)
    (out,), sigs, _ = _mm_run({"action": "run_both"}, pt.float64_candidate(), a, b)
    assert torch.equal(out, a @ b)  # golden propagates
    sig = sigs["aten::mm"]
    assert sig.reduction_length == 256 and sig.relative_l2 < 1e-6
    assert sig.rounding_bound_ratio[1] <= 1.0
    assert sig.effective_mantissa_bits(0.5) >= 18
    # positive data (no cancellation): both bounds hold
    a, b = torch.rand(64, 256), torch.rand(256, 48)
    _, sigs, _ = _mm_run({"action": "run_both"}, pt.float64_candidate(), a, b)
    det, prob = sigs["aten::mm"].rounding_bound_ratio
    assert 0 < det <= 1.0 and 0 < prob <= 1.0, (det, prob)


def test_bf16_mm_candidate_shows_bf16_mantissa():
    torch.manual_seed(2)
    a, b = torch.rand(64, 128), torch.rand(128, 32)  # positive: no cancellation
    _, sigs, _ = _mm_run({"action": "run_both"}, pt.autocast_candidate(torch.bfloat16), a, b)
    bits = sigs["aten::mm"].mantissa_bits
    assert 6 <= bits <= 9, bits


def test_run_candidate_propagates_candidate_and_strided_inputs():
    torch.manual_seed(3)
    a, b = torch.randn(40, 32), torch.randn(24, 32)
    (out,), sigs, firings = _mm_run({"action": "run_candidate"},
                                    pt.autocast_candidate(torch.bfloat16), a, b.t())
    expect = (a.to(torch.bfloat16) @ b.t().to(torch.bfloat16)).float()
    assert torch.equal(out, expect) and firings[0]["action"] == "run_candidate"
    # the candidate alone ran: no comparison (run_both is the mode that compares)
    assert firings[0]["status"] == "ok" and firings[0]["signature"] is None and sigs == {}
    (out,), sigs, firings = _mm_run({"action": "run_both"},
                                    pt.autocast_candidate(torch.bfloat16), a, b.t())
    assert torch.equal(out, a @ b.t()) and sigs["aten::mm"].count == 40 * 24


def test_run_candidate_falls_back_to_golden_when_the_candidate_fails():
    a, b = torch.randn(8, 4), torch.randn(4, 3)

    def broken(func, args, kwargs):
        raise RuntimeError("no kernel")
    (out,), _, firings = _mm_run({"action": "run_candidate"}, broken, a, b)
    assert torch.equal(out, a @ b) and firings[0]["status"].startswith("candidate failed")
    (out,), _, firings = _mm_run({"action": "run_candidate"},
                                 lambda func, args, kwargs: torch.zeros(3, 3), a, b)
    assert torch.equal(out, a @ b) and firings[0]["status"] == "candidate output shapes differ"


def test_injected_exponent_bit_flip_changes_exactly_one_element():
    torch.manual_seed(4)
    a, b = torch.randn(32, 16), torch.randn(16, 20)
    spec = peat.InjectSpec("bitflip", field="exponent", count=1)
    (out,), sigs, firings = _mm_run({"action": "inject", "spec": spec}, None, a, b)
    ref = a @ b
    diff = (out.view(torch.int32) != ref.view(torch.int32))
    assert int(diff.sum()) == 1
    truth = firings[0]["truth"]
    assert truth["changed"] == 1 and truth["model"] == "BITFLIP_SINGLE"
    idx = truth["changes"][0][0]
    assert bool(diff.reshape(-1)[idx])
    assert sigs["aten::mm"].bitwise_mismatch_count == 1


def test_runtime_fi_at_a_frequency_fires_exactly():
    torch.manual_seed(5)
    a, b = torch.randn(8, 8), torch.randn(8, 8)
    spec = peat.InjectSpec("bitflip", bit=3, count=1)
    outs, _, firings = _mm_run({"action": "inject", "spec": spec, "every_n": 4,
                                "phase_offset": 1}, None, a, b, calls=22)
    assert [f["call"] for f in firings] == [1, 5, 9, 13, 17, 21]
    ref = a @ b
    changed = [i for i, o in enumerate(outs) if not torch.equal(o, ref)]
    assert changed == [1, 5, 9, 13, 17, 21]
    _, _, capped = _mm_run({"action": "inject", "spec": spec, "max_firings": 3}, None, a, b,
                           calls=10)
    assert len(capped) == 3


def test_mode_passes_other_ops_through_and_counts_calls():
    with peat.Session() as s:
        mode = pt.PeatMode(s)
        x = torch.randn(4, 4)
        with mode:
            y = (x + 1).relu().sum()
            z = x @ x
        assert torch.equal(z, x @ x) and y.item() == pytest.approx((x + 1).relu().sum().item())
        assert mode.ops_seen == 1 and s.call_count(s.intern("aten::mm")) == 1
        mode.close()


def test_candidate_helpers_mkldnn_and_threads():
    torch.manual_seed(6)
    x, w = torch.randn(2, 3, 10, 10), torch.randn(4, 3, 3, 3)
    with peat.Session() as s:
        mode = pt.PeatMode(s)
        mode.set_candidate("*convolution", pt.mkldnn_candidate(False))
        mode.set_candidate("aten::mm", pt.threads_candidate(1))
        mode.injector.add_policy("*", "run_both")
        with mode:
            y = F.conv2d(x, w)
            z = x.flatten(1) @ x.flatten(1).t()
        sigs = mode.signatures()
        mode.close()
    assert torch.equal(y, F.conv2d(x, w)) and torch.equal(z, x.flatten(1) @ x.flatten(1).t())
    conv = sigs["aten::convolution"]
    assert conv.count == y.numel() and conv.reduction_length == 27
    assert conv.rounding_bound_ratio[1] <= 1.0
    assert sigs["aten::mm"].count == 4


def test_injector_dispatch_with_bf16_torch_kernels():
    with peat.Session() as s, peat.Injector(s) as inj:
        inj.add_policy("scale", "run_candidate")
        inj.set_candidate("scale", lambda ins, outs: outs[0].copy_(ins[0] * 3))
        x = torch.arange(12, dtype=torch.bfloat16).reshape(3, 4)
        out = torch.zeros(4, 3, dtype=torch.bfloat16).t()  # strided output view
        action, call = inj.dispatch("scale", [x], [out], lambda ins, outs: outs[0].copy_(ins[0]))
        assert (action, call) == ("run_candidate", 0)
        assert torch.equal(out, x * 3)
        (f,) = inj.firings()
        assert f.kept_golden is False and f.status == 0


def test_candidate_from_a_shared_object():
    import os
    lib = os.environ.get("PEAT_CANDIDATES_LIBRARY")
    if not lib:
        pytest.skip("PEAT_CANDIDATES_LIBRARY not set (examples/candidates not built)")
    torch.manual_seed(7)
    a, b = torch.rand(33, 70), torch.rand(50, 70).t()  # strided B
    (out,), sigs, firings = _mm_run({"action": "run_candidate"},
                                    pt.shared_object_candidate(f"{lib}:peat_cand_blocked_kernel"),
                                    a, b)
    assert firings[0]["status"] == "ok" and out.shape == (33, 50)
    assert torch.allclose(out, a @ b, rtol=1e-5) and sigs == {}  # run_candidate compares nothing
    (out,), sigs, firings = _mm_run({"action": "run_both"},
                                    pt.shared_object_candidate(f"{lib}:peat_cand_blocked_kernel"),
                                    a, b)
    sig = sigs["aten::mm"]
    assert sig.count == 33 * 50 and sig.reduction_length == 70
    det, prob = sig.rounding_bound_ratio  # a different summation order: rounding level
    assert det <= 1.0 and prob <= 1.0
    assert torch.allclose(out, a @ b, rtol=1e-5)
    (out,), sigs, _ = _mm_run({"action": "run_both"},
                              pt.shared_object_candidate(f"{lib}:peat_cand_bf16_kernel"), a, b)
    assert torch.equal(out, a @ b) and 6 <= sigs["aten::mm"].mantissa_bits <= 9


def test_replay_trace_against_torch_candidates(training_run):
    with peat.TraceReader(training_run["path"]) as r:
        exact = pt.replay(r, "fc/aten::addmm")
        sig = exact["fc/aten::addmm"]
        assert sig.count == 64 * 10 * STEPS and sig.bitwise_mismatch_count == 0
        f64 = pt.replay(r, "*aten::mm", pt.replay_candidate(pt.float64_candidate()))
        # fc's backward has two mm (grad input K=10, grad weight K=64): kept apart
        assert set(f64) == {"fc/aten::mm K=10", "fc/aten::mm K=64"}
        for sig in f64.values():
            assert sig.count > 0 and sig.rounding_bound_ratio[1] <= 1.0
        bf16 = pt.replay(r, "fc/aten::addmm",
                         pt.replay_candidate(pt.autocast_candidate(torch.bfloat16)))
        assert bf16["fc/aten::addmm"].effective_mantissa_bits(0.5) <= 9
        assert bf16["fc/aten::addmm"].max_rel_error > 2.0 ** -9


def test_backward_mm_signatures_are_kept_apart_by_reduction_length():
    torch.manual_seed(8)
    model = nn.Sequential(nn.Linear(12, 5))
    x = torch.randn(7, 12, requires_grad=True)  # both grads: two backward mm
    with peat.Session() as s:
        mode = pt.PeatMode(s, model=model)
        mode.set_candidate("*aten::mm", pt.float64_candidate())
        mode.injector.add_policy("*aten::mm", "run_both")
        with mode:
            model(x).square().sum().backward()
        sigs = mode.signatures()
        mode.close()
    # grad input: [7,5] @ [5,12] (K=5); grad weight: [5,7] @ [7,12] (K=7)
    assert set(sigs) == {"0/aten::mm K=5", "0/aten::mm K=7"}
    assert sigs["0/aten::mm K=5"].count == 7 * 12 and sigs["0/aten::mm K=7"].count == 5 * 12


def test_out_overload_run_candidate_writes_the_out_tensor_and_run_both_keeps_golden():
    torch.manual_seed(4)
    a, b = torch.rand(16, 32), torch.rand(32, 8)
    expect = (a.to(torch.bfloat16) @ b.to(torch.bfloat16)).float()
    for action in ("run_candidate", "run_both"):
        with peat.Session(seed=3) as s:
            mode = pt.PeatMode(s)
            mode.set_candidate("aten::mm", pt.autocast_candidate(torch.bfloat16))
            mode.injector.add_policy("aten::mm", action)
            c = torch.empty(16, 8)
            with mode:
                r = torch.mm(a, b, out=c)
            firings = list(mode.firings)
            mode.close()
        assert firings and firings[0]["status"] == "ok", firings
        assert r.data_ptr() == c.data_ptr()
        if action == "run_candidate":  # the candidate's result, in the out tensor
            assert torch.equal(c, expect)
        else:  # golden in the out tensor, the candidate compared on copies
            assert torch.equal(c, a @ b) and firings[0]["signature"] is not None
