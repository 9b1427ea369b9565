"""A short real training run (a CNN on sklearn's digits) under the dispatch
mode, recorded; its mm / addmm / convolution calls played back through the
library's Playback against torch and shared-object candidates, and the
Detector's verdicts on the results; runtime FI during training with an exact
number of firings, each logged in the session's log and named by the
Detector."""
import json
import os

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

import peat  # noqa: E402
import peat.torch as pt  # noqa: E402

STEPS = 4
BATCH = 48
FI_EVERY = 3  # exponent bit flip in fc's addmm on forward calls 0, 3 (of STEPS)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3, padding=1)
        self.fc = nn.Linear(6 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        return self.fc(x.flatten(1))


def _train(tmp_path, *, record: bool, fi: bool):
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.tensor(d.images[:STEPS * BATCH] / 16.0, dtype=torch.float32).unsqueeze(1)
    y = torch.tensor(d.target[:STEPS * BATCH])
    torch.manual_seed(0)
    model = SmallCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    path = tmp_path / "train.peat"
    losses = []
    with peat.Session(seed=21, run_name="digits") as s:
        prof = peat.Profiler(s, path, framework=f"pytorch {torch.__version__}") if record else None
        mode = pt.PeatMode(s, model=model, profiler=prof)
        if fi:
            mode.injector.add_policy("fc/aten::addmm", "inject", every_n=FI_EVERY,
                                     spec=peat.InjectSpec("bitflip", field="exponent", count=1))
        with mode:
            for step in range(STEPS):
                mode.set_step(step)
                xb, yb = x[step * BATCH:(step + 1) * BATCH], y[step * BATCH:(step + 1) * BATCH]
                loss = F.cross_entropy(model(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
        firings = list(mode.firings)
        detections = mode.detect()
        logs = s.logs()
        mode.close()
        if prof is not None:
            prof.close()
    return {"path": path, "losses": losses, "firings": firings, "detections": detections,
            "logs": logs}


@pytest.fixture(scope="module")
def golden_run(tmp_path_factory):
    return _train(tmp_path_factory.mktemp("golden"), record=True, fi=False)


def _playback(path, op_glob, candidate, **kw):
    with peat.TraceReader(path) as r, peat.Playback(r, candidate=candidate, op_glob=op_glob,
                                                    **kw) as pb:
        summary = pb.run()
        return summary, pb.detect(), pb.results(), pb.signatures()


def test_recorded_training_replays_exactly(golden_run):
    summary, detections, results, sigs = _playback(
        golden_run["path"], "*", pt.playback_candidate())
    # every recorded op call, forward and backward, rebuilt from the recorded tensors
    # and attributes (ints, int lists, bools, dtypes, None) and run again: bit-exact
    names = {r.op for r in results}
    assert {"fc/aten::addmm", "conv1/aten::convolution", "fc/aten::mm",
            "conv1/aten::convolution_backward", "aten::_log_softmax",
            "aten::_log_softmax_backward_data"} <= names, names
    # per step: convolution, addmm, _log_softmax forward; its backward, two mm, the
    # convolution's backward
    assert summary.selected == summary.ok == summary.exact == len(results) == 7 * STEPS
    for name, det in detections.items():
        assert det.models == ["EXACT"], (name, det.models)
        assert det.mismatches == 0 and det.elements == sigs[name].count > 0


def test_float64_replay_is_rounding(golden_run):
    summary, detections, results, sigs = _playback(
        golden_run["path"], "*aten::[acm]*", pt.playback_candidate(pt.float64_candidate()))
    assert summary.ok == summary.selected and summary.exact == 0
    for name in ("fc/aten::addmm", "fc/aten::mm", "conv1/aten::convolution"):
        det = detections[name]
        assert det.top.model == "ROUNDING", (name, det.render())
        assert det.top.effective_mantissa_bits > 15, (name, det.top)
        assert any("rounding" in line.lower() or "bound" in line.lower()
                   for line in det.top.evidence), det.top.evidence
    assert sigs["fc/aten::addmm"].max_abs_error > 0
    json.dumps({k: v.to_dict() for k, v in detections.items()})
    # conv1's backward computes no grad input (output_mask, recorded): its first
    # output is the weight gradient, K = N * H_out * W_out from the recorded shapes
    with peat.TraceReader(golden_run["path"]) as r, peat.Playback(
            r, candidate=pt.playback_candidate(pt.float64_candidate()),
            op_glob="conv1/aten::convolution_backward") as pb:
        pb.run()
        assert pb.reduction_lengths(0) == {"conv1/aten::convolution_backward": BATCH * 8 * 8}
        assert pb.detect(output=0)["conv1/aten::convolution_backward"].top.model == "ROUNDING"
        assert pb.record_verdicts(output=0) == {
            "conv1/aten::convolution_backward": {"ROUNDING": STEPS}}


def test_bf16_mm_replay_is_reduced_precision(golden_run):
    summary, detections, _, sigs = _playback(
        golden_run["path"], "*aten::*mm", pt.playback_candidate(pt.autocast_candidate(torch.bfloat16)))
    assert summary.ok == summary.selected == summary.mismatched
    for name in ("fc/aten::addmm", "fc/aten::mm"):
        top = detections[name].top
        assert top.model == "REDUCED_PRECISION", (name, detections[name].render())
        assert top.nearest_format == "bf16", top
        # bf16 keeps 7 mantissa bits (8 with the implicit one); cancellation in
        # the signed training data costs up to one more
        assert 6.0 <= top.effective_mantissa_bits <= 8.5, top.effective_mantissa_bits
    rendered = json.loads(peat.detect(sigs["fc/aten::addmm"], op_kind="gemm",
                                      reduction_length=96).render("json"))
    assert rendered["schema_version"] == 1
    assert rendered["verdicts"][0]["model"] == "REDUCED_PRECISION"


def test_injected_exponent_bit_flip_replay_is_bitflip_single(golden_run):
    def flipped(inputs, outputs, call):
        pt.playback_candidate()(inputs, outputs, call)
        truth = peat.inject(peat.InjectSpec("bitflip", field="exponent", count=1), outputs[0],
                            seed=call.step, op=0, call=call.call_index)
        assert truth.changed == 1 and truth.model == "BITFLIP_SINGLE"

    verdicts = {}
    with peat.TraceReader(golden_run["path"]) as r:
        for glob in ("*aten::convolution", "*aten::[am]*"):  # forward conv and addmm, backward mm
            with peat.Playback(r, candidate=flipped, op_glob=glob) as pb:
                summary = pb.run()
                assert summary.ok == summary.selected == summary.mismatched > 0
                for res in pb.results():
                    assert res.bitwise_mismatches == 1
                    det = pb.detect_record(res.index)  # op kind and K from the record
                    assert det.top.model == "BITFLIP_SINGLE", (res.op, det.render())
                    assert 23 <= det.top.bit <= 30, det.top  # an fp32 exponent bit
                verdicts.update(pb.record_verdicts())
    assert verdicts == {"conv1/aten::convolution": {"BITFLIP_SINGLE": STEPS},
                        "fc/aten::addmm": {"BITFLIP_SINGLE": STEPS},
                        "fc/aten::mm": {"BITFLIP_SINGLE": 2 * STEPS}}


def test_shared_object_candidates_in_playback(golden_run):
    lib = os.environ.get("PEAT_CANDIDATES_LIBRARY")
    if not lib:
        pytest.skip("PEAT_CANDIDATES_LIBRARY not set (examples/candidates not built)")
    # backward mm records: C = A @ B, the GEMM kernels' convention (attrs NULL)
    summary, detections, _, _ = _playback(golden_run["path"], "*aten::mm",
                                          f"{lib}:peat_cand_bf16_kernel")
    assert summary.ok == summary.selected == 2 * STEPS
    top = detections["fc/aten::mm"].top
    assert top.model == "REDUCED_PRECISION" and top.nearest_format == "bf16", top
    summary, detections, _, _ = _playback(golden_run["path"], "*aten::mm",
                                          f"{lib}:peat_cand_pairwise_kernel")
    assert summary.ok == summary.selected
    assert detections["fc/aten::mm"].top.model in ("ROUNDING", "EXACT")
    with pytest.raises(peat.NotFoundError, match="no_such_symbol"):
        _playback(golden_run["path"], "*aten::mm", f"{lib}:no_such_symbol")


def test_playback_progress_cancel_and_failures(golden_run, tmp_path):
    seen = []
    with peat.TraceReader(golden_run["path"]) as r:
        with peat.Playback(r, candidate=pt.playback_candidate(),
                           progress=lambda done, total: seen.append((done, total))) as pb:
            full = pb.run()
        assert [d for d, _ in seen] == list(range(1, full.selected + 1))
        assert {t for _, t in seen} == {full.selected}
        with peat.Playback(r, candidate=pt.playback_candidate(),
                           progress=lambda done, total: done < 3) as pb:
            s = pb.run()
            assert s.cancelled and s.done == 3 and len(pb) == 3
        with peat.Playback(r, op_glob="*aten::addmm") as pb:
            def cancelling(inputs, outputs, call):
                pb.cancel()
                return pt.playback_candidate()(inputs, outputs, call)
            pb.set_candidate(cancelling)
            s = pb.run()
            assert s.cancelled and s.done == 1
        with peat.Session() as session, peat.Playback(
                r, candidate=lambda i, o, c: 1 / 0, op_glob="fc/aten::addmm",
                session=session) as pb:
            s = pb.run()
            assert s.failed == s.selected == STEPS and s.ok == 0
            res = pb.result(0)
            assert res.status == peat.status_string(peat.CallbackFailedError.status)
            assert "fc/aten::addmm" in res.message and "train.peat" in res.message
            assert len(pb.candidate_errors) == STEPS
            assert "ZeroDivisionError" in pb.candidate_errors[0][3]
            warnings = [m for lvl, m in session.logs() if lvl == "warning"]
            assert len(warnings) == STEPS and "ZeroDivisionError" in warnings[0]
            with pytest.raises(peat.NotFoundError):
                pb.result_signature(0)
            pb.write_jsonl(tmp_path / "pb.jsonl")
            lines = [json.loads(x) for x in (tmp_path / "pb.jsonl").read_text().splitlines()]
            assert sum(1 for x in lines if x.get("type") == "record") == STEPS
        with peat.Playback(r) as pb, pytest.raises(peat.BadStateError):
            pb.run()  # no candidate


def test_playback_run_twice_and_groups(golden_run):
    with peat.TraceReader(golden_run["path"]) as r, \
            peat.Playback(r, candidate=pt.playback_candidate(), op_glob="*aten::addmm",
                          run_twice=True) as pb:
        s = pb.run()
        assert s.ok == STEPS and s.nondeterministic == 0
        assert all(res.deterministic == 1 for res in pb.results())
        (group,) = pb.groups("layer")
        assert group.name == "fc" and group.records == STEPS
        rerun = pb.group_signature(0, "op", which="second_vs_first")
        assert rerun.count == BATCH * 10 * STEPS and rerun.bitwise_mismatch_count == 0


def test_runtime_fi_during_training_fires_exactly_and_logs(tmp_path):
    run = _train(tmp_path, record=False, fi=True)
    expected_calls = [c for c in range(STEPS) if c % FI_EVERY == 0]
    firings = run["firings"]
    assert [f["call"] for f in firings] == expected_calls
    assert [f["step"] for f in firings] == expected_calls  # one forward addmm per step
    for f in firings:
        assert f["status"] == "ok" and f["truth"]["changed"] == 1
        det = peat.detect(f["signature"], op_kind="gemm")
        assert det.top.model == "BITFLIP_SINGLE", det.render()
    # every firing went through the library's session log, nothing else did
    fi_logs = [m for lvl, m in run["logs"] if m.startswith("peat.torch: inject")]
    assert len(fi_logs) == len(expected_calls)
    assert "fc/aten::addmm call 0 step 0" in fi_logs[0] and "BITFLIP_SINGLE" in fi_logs[0]
    # the merged signature over all firings: one flipped element per firing
    sig_name = next(n for n in run["detections"] if n.startswith("fc/aten::addmm"))
    assert run["detections"][sig_name].mismatches == len(expected_calls)


def test_pipelined_playback_with_a_python_candidate_matches_serial(golden_run):
    """thread_safe=True: oneTBB worker threads call the Python candidate (each
    call takes the GIL); the results equal the serial run's, in record order."""
    cand = pt.playback_candidate(pt.autocast_candidate(torch.bfloat16))
    out = []
    for kw in ({}, {"thread_safe": True, "num_threads": 2, "max_in_flight": 3}):
        with peat.TraceReader(golden_run["path"]) as r, \
                peat.Playback(r, candidate=cand, op_glob="*aten::[am]*m", **kw) as pb:
            s = pb.run()
            out.append((s.to_dict(), [(x.record, x.bitwise_mismatches) for x in pb.results()],
                        {k: v.max_abs_error for k, v in pb.signatures().items()}))
    assert out[0] == out[1] and out[0][0]["ok"] == 3 * STEPS
