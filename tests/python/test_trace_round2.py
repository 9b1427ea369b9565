# Issue 23 in the Python package: strings that survive every output, the
# BAD_STATE class after close, readers that keep what follows a record they
# cannot use, and the intact-record copy.
import pathlib

import numpy as np
import pytest

import peat

REGRESSIONS = pathlib.Path(__file__).resolve().parents[1] / "fuzz" / "regressions" / "trace_file"


def test_profiler_after_close_raises_bad_state(session, tmp_path):
    p = peat.Profiler(session, tmp_path / "closed.peat")
    p.close()
    for call in (lambda: p.record_scalar("loss", 1.0), lambda: p.mark_step(1), p.flush,
                 lambda: p.record_op("aten::add", force=True)):
        with pytest.raises(peat.BadStateError):
            call()


def test_non_utf8_names_are_refused_when_recorded(session, tmp_path):
    path = tmp_path / "utf8.peat"
    with peat.Profiler(session, path) as p:
        with pytest.raises(peat.InvalidArgumentError, match="not valid UTF-8"):
            p.record_scalar(b"loss\xff", 1.0)
        with pytest.raises(peat.InvalidArgumentError, match="not valid UTF-8"):
            p.record_op(session.intern(b"op\xc3"), force=True)
        p.record_scalar("caf\u00e9", 2.0)
    with peat.TraceReader(path) as r:
        assert [rec.name for rec in r] == ["caf\u00e9"]


def test_crafted_non_utf8_trace_is_refused_or_skipped_never_a_decode_error():
    path = REGRESSIONS / "issue23-non_utf8"
    with pytest.raises(peat.CorruptDataError, match="record 1 at byte .*not valid UTF-8"):
        peat.TraceReader(path)
    with peat.TraceReader(path, recover=True) as r:
        names = [rec.name for rec in r]
        assert names == ["ok", "\x1b[31mred\x1b[0m\x07", "after"]
        count, first = r.skipped()
        assert count == 1 and "record 1" in first
        assert "skipped" in r.recovery["stop_reason"]


def test_copy_intact_keeps_odd_values_and_the_records_after_a_damaged_payload(tmp_path):
    src = REGRESSIONS / "issue23-odd_values"
    out = tmp_path / "copy.peat"
    with peat.TraceReader(src, recover=True) as r:
        original = [r.record(i) for i in range(len(r))]
        info = r.run_info()
        assert r.copy_intact(out) == (len(original) - 1, 1)
    with peat.TraceReader(out) as c:
        assert c.run_info()["rank"] == 2**31 - 1
        assert c.run_info()["created_unix_ns"] == info["created_unix_ns"]
        kept = [rec for rec in original if rec.name != "damaged"]
        assert [(x.kind, x.name, x.step, x.unix_ns) for x in c] == [(x.kind, x.name, x.step, x.unix_ns) for x in kept]
        assert c.attrs(2) == {"": 5}
        assert c.verify() == 0


def test_max_record_bytes_fails_one_record(session, tmp_path):
    path = tmp_path / "cap.peat"
    with peat.Profiler(session, path) as p:
        p.record_op("big", outputs=[np.zeros(1 << 18, np.float32)], force=True)  # 1 MiB
        p.record_op("small", outputs=[np.ones(4, np.float32)], force=True)
    with peat.TraceReader(path, max_record_bytes=1 << 19) as r:
        with pytest.raises(peat.OutOfMemoryError, match="max_record_bytes"):
            r.load_alloc(0)
        assert r.load_alloc(1).tolist() == [1.0] * 4
