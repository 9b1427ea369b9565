"""peat.torch.NativeMode (libpeat_torch): its records are PeatMode's, call
for call, on real models; its errors; torch untouched once it leaves."""
import copy
import warnings

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

import peat  # noqa: E402
import peat.torch as pt  # noqa: E402

try:
    pt.native_library()
except peat.PeatError as exc:  # built only where libtorch-dev was found
    pytest.skip(f"libpeat_torch not built: {exc}", allow_module_level=True)


class ConvBN(nn.Module):
    """Convolution, batch norm (writes its running statistics), linear."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 8 * 8, 10)

    def forward(self, x):
        return self.fc(F.relu(self.bn(self.conv(x))).flatten(1))


class TinyLM(nn.Module):
    """Embedding, a transformer encoder (layer norm, softmax, bmm), head."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(16, 50)

    def forward(self, x):
        return self.head(self.enc(self.emb(x)))


def _train(mode_cls, model, batch, path, ops=None, steps=2, warn=False):
    """`steps` SGD steps of `model` (a copy) under mode_cls recording every
    call; PeatWarnings are ignored unless `warn`."""
    model = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = batch
    kwargs = {} if ops is None else {"ops": ops}
    with peat.Session() as s, peat.Profiler(s, path) as prof:
        prof.add_rule("*", every_n=1)
        mode = mode_cls(s, model=model, profiler=prof, **kwargs)
        with warnings.catch_warnings():
            if not warn:
                warnings.simplefilter("ignore", pt.PeatWarning)
            with mode:
                for step in range(steps):
                    mode.set_step(step)
                    out = model(x)
                    loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
        stats = mode.stats() if mode_cls is pt.NativeMode else None
        log = s.logs()
    return model, stats, log


def _records(path):
    """Every op record: step, name, phase, module path, call, attributes and
    each tensor's slot, name, dtype, shape, strides and checksum."""
    out = []
    with peat.TraceReader(path) as r:
        for rec in r:
            if rec.kind != "op":
                continue
            tensors = []
            for slot, n in (("input", rec.n_inputs), ("output", rec.n_outputs)):
                for i in range(n):
                    t = r.tensor_info(rec.index, slot, i)
                    tensors.append((slot, t.name, t.dtype, t.shape, t.strides, t.checksum))
            out.append((rec.step, rec.name, rec.phase, rec.module_path, rec.call_index,
                        r.attrs(rec.index), tensors))
    return out


def _parity(tmp_path, model, batch, ops=None):
    torch.manual_seed(0)
    m_py, _, _ = _train(pt.PeatMode, model, batch, tmp_path / "python.peat", ops)
    torch.manual_seed(0)
    m_nat, stats, log = _train(pt.NativeMode, model, batch, tmp_path / "native.peat", ops)
    for a, b in zip(m_py.parameters(), m_nat.parameters()):
        assert torch.equal(a, b)  # neither mode changes what training computes
    python, native = _records(tmp_path / "python.peat"), _records(tmp_path / "native.peat")
    return python, native, stats, log


def test_conv_batchnorm_records_equal_peatmode(tmp_path):
    torch.manual_seed(0)
    batch = torch.randn(2, 3, 8, 8), torch.randint(0, 10, (2,))
    python, native, stats, _ = _parity(tmp_path, ConvBN(), batch)
    assert len(python) > 0
    assert native == python
    names = {r[1] for r in native}
    # forward and backward calls, named after their modules
    assert {"conv/aten::convolution", "bn/aten::native_batch_norm", "fc/aten::addmm"} <= names
    assert ("conv/aten::convolution_backward", "backward") in {(r[1], r[2]) for r in native}
    bn = next(r for r in native if r[1] == "bn/aten::native_batch_norm")
    assert bn[5]["written_args"] == [3, 4]  # running statistics: before as inputs, after as outputs
    assert stats["ops_handled"] == stats["ops_recorded"] == len(native)


def test_transformer_records_equal_peatmode(tmp_path):
    torch.manual_seed(0)
    batch = torch.randint(0, 50, (2, 6)), torch.randint(0, 50, (2, 6))
    python, native, _, _ = _parity(tmp_path, TinyLM(), batch)
    assert native == python
    ops = {r[1].rsplit("/", 1)[-1] for r in native}
    assert {"aten::embedding", "aten::native_layer_norm", "aten::_softmax", "aten::bmm"} & ops
    # a dtype argument is recorded as torch names it, default arguments as a mode sees them
    softmax_bw = [r for r in native if r[1].endswith("aten::_softmax_backward_data")]
    assert softmax_bw and all(r[5]["dtype_args"] == [3] for r in softmax_bw)
    emb = next(r for r in native if r[1] == "emb/aten::embedding")
    assert emb[5] == {"tensor_args": [0, 1]}


def test_tensor_list_op_recorded_and_warned(tmp_path):
    class Cat(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 3)

        def forward(self, x):
            return self.fc(torch.cat([x, x * 2], 1))

    torch.manual_seed(0)
    batch = torch.randn(2, 4), torch.randint(0, 3, (2,))
    python, native, _, log = _parity(tmp_path, Cat(), batch, ops={"cat", "addmm"})
    assert native == python
    # both modes warn alike: once, in the session log and as a PeatWarning
    text = ("peat.torch: Cat/aten::cat: a tensor-list argument: the call is recorded but cannot be "
            "rebuilt on replay")
    for cls in (pt.PeatMode, pt.NativeMode):
        with pytest.warns(pt.PeatWarning) as caught:
            _, _, log_of = _train(cls, Cat(), batch, tmp_path / f"{cls.__name__}.peat",
                                  ops={"cat", "addmm"}, warn=True)
        assert [str(w.message) for w in caught if "tensor-list" in str(w.message)] == [text]
        assert [m for level, m in log_of if "tensor-list" in m] == [text]
    cat = next(r for r in native if r[1] == "Cat/aten::cat")  # the root module is named by its type
    assert [t[1] for t in cat[6] if t[0] == "input"] == ["tensors.0", "tensors.1"]
    assert ("warning", "peat.torch: Cat/aten::cat: a tensor-list argument: the call "
            "is recorded but cannot be rebuilt on replay") in log


def test_idle_mode_counts_and_passes_calls_on_after_exit():
    model = ConvBN()
    x = torch.randn(2, 3, 8, 8)
    with peat.Session() as s:
        mode = pt.NativeMode(s, model=model)
        with mode:
            model(x).sum().backward()
            during = mode.stats()
        # conv, bn, addmm forward; backward: conv (its input needs no gradient), bn, two mm
        assert during["ops_handled"] == 7
        assert during["ops_recorded"] == 0
        model(x).sum().backward()  # after exit: nothing handled
        assert mode.stats() == during
        # entered again: a new hook, whose counts start from 0
        with mode:
            model(x)
            assert mode.stats()["ops_handled"] == 3


def test_one_native_mode_at_a_time_and_bad_ops():
    with peat.Session() as s:
        a, b = pt.NativeMode(s), pt.NativeMode(s)
        with a:
            with pytest.raises(peat.BadStateError, match="already attached"):
                b.__enter__()
        with pytest.raises(peat.NotFoundError, match="no op aten::not_an_op"):
            with pt.NativeMode(s, ops=["not_an_op"]):
                pass
        # in-place ops keep torch's own kernel on the key: refused, not silently unseen
        with pytest.raises(peat.UnsupportedError, match="aten::add_ has no overload the hook can take"):
            with pt.NativeMode(s, ops=["add", "add_"]):
                pass
        with a:  # a failed entry left nothing attached
            pass
        with pytest.raises(ValueError, match="unknown phase"):
            pt.NativeMode(s).default_phase = "sideways"


def test_default_phase_names_ops_outside_modules(tmp_path):
    w = torch.randn(4, 4, requires_grad=True)
    with peat.Session() as s, peat.Profiler(s, tmp_path / "t.peat") as prof:
        prof.add_rule("*", every_n=1)
        mode = pt.NativeMode(s, profiler=prof)
        with mode:
            mode.default_phase = "optimizer"
            torch.mm(w, w)
    [rec] = _records(tmp_path / "t.peat")
    assert (rec[1], rec[2], rec[3]) == ("aten::mm", "optimizer", "")


def test_every_native_function_is_prototyped_and_called():
    """The functions libpeat_torch exports (peat_torch.h) are the ones the
    module gives ctypes prototypes, and each is called somewhere."""
    import pathlib
    import re
    import shutil
    import subprocess

    from peat import torch_native

    if shutil.which("nm") is None:
        pytest.skip("nm (binutils) not installed")
    out = subprocess.run(["nm", "-D", "--defined-only", torch_native.native_library()._name],
                         check=True, capture_output=True, text=True).stdout
    exported = {line.split()[2].split("@")[0] for line in out.splitlines()
                if len(line.split()) == 3 and line.split()[1] == "T"}
    assert exported == set(torch_native._PROTOTYPES)
    source = pathlib.Path(torch_native.__file__).read_text()
    called = set(re.findall(r"\.(peat_torch_\w+)\(", source)) | set(
        re.findall(r"native\.(peat_torch_\w+)", source))
    assert called == exported


class Scalars(nn.Module):
    """Python numbers (wrapped-number tensors inside torch), an index with a
    None entry (Tensor?[]), an op returning a tensor list."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x):
        h = self.fc(x) * 0.5 + 1
        picked = h[:, torch.tensor([0, 2, 4])]
        parts = torch.unsafe_split(h, 2, dim=1)
        return picked.sum(1, keepdim=True) + parts[0][:, :1] + parts[2][:, :1]


def test_scalars_optional_lists_and_list_results_equal_peatmode(tmp_path):
    torch.manual_seed(0)
    batch = torch.randn(3, 6), torch.randint(0, 1, (3,))
    ops = {"mul", "add", "index", "unsafe_split", "addmm"}
    python, native, _, _ = _parity(tmp_path, Scalars(), batch, ops=ops)
    assert native == python
    mul = next(r for r in native if r[1].endswith("aten::mul") and r[2] == "forward")
    assert mul[5]["arg1"] == 0.5 and mul[5]["tensor_args"] == [0]  # a number, not a tensor input
    index = next(r for r in native if r[1].endswith("aten::index"))
    assert [t[1] for t in index[6] if t[0] == "input"] == ["self", "indices.0"]
    split = next(r for r in native if r[1].endswith("aten::unsafe_split"))
    assert [t[1] for t in split[6] if t[0] == "output"] == ["output0", "output1", "output2"]


def test_forward_that_raised_leaves_no_stale_module(tmp_path):
    class Boom(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.armed = True

        def forward(self, x):
            y = self.fc(x)
            if self.armed:
                raise RuntimeError("boom")
            return y

    def run(cls, path):
        torch.manual_seed(0)
        model, w = Boom(), torch.randn(4, 4, requires_grad=True)
        with peat.Session() as s, peat.Profiler(s, path) as prof:
            prof.add_rule("*", every_n=1)
            with cls(s, model=model, profiler=prof):
                with pytest.raises(RuntimeError, match="boom"):
                    model(torch.randn(2, 4))
                model.armed = False
                model(torch.randn(2, 4)).sum().backward()
                torch.mm(w, w)  # outside any module
        return _records(path)

    python, native = run(pt.PeatMode, tmp_path / "p.peat"), run(pt.NativeMode, tmp_path / "n.peat")
    assert native == python
    assert native[-1][1:4] == ("aten::mm", "forward", "")


def test_profiler_closed_inside_the_mode_detaches_it(tmp_path):
    w = torch.randn(4, 4)
    with peat.Session() as s:
        prof = peat.Profiler(s, tmp_path / "t.peat")
        prof.add_rule("*", every_n=1)
        with pt.NativeMode(s, profiler=prof) as mode:
            torch.mm(w, w)
            prof.close()  # the mode detaches first: nothing uses the closed profiler
            torch.mm(w, w)
            assert mode.stats()["ops_recorded"] == 1
        with pt.NativeMode(s):  # and another may enter
            torch.mm(w, w)


def test_other_threads_ops_pass_untouched():
    import threading

    w = torch.randn(8, 8)
    with peat.Session() as s:
        with pt.NativeMode(s) as mode:
            t = threading.Thread(target=lambda: torch.mm(w, w))
            t.start()
            t.join()
            assert mode.stats()["ops_handled"] == 0
            torch.mm(w, w)
            assert mode.stats()["ops_handled"] == 1


def test_leaving_while_another_thread_runs_hooked_ops():
    """Entering and leaving 200 times beside a thread of mm calls: the calls
    of the other thread all succeed (the kernels stay registered, so torch's
    dispatcher is not changed under them; a removal racing a call failed
    inside torch) and detaching waits for calls in flight that read the hook."""
    import threading

    w = torch.randn(16, 16)
    stop, errors = threading.Event(), []
    with peat.Session() as s:
        with pt.NativeMode(s, ops=["mm"]):  # registered before the thread starts (peat_torch.h)
            pass

        def spin():
            try:
                while not stop.is_set():
                    torch.mm(w, w)
            except Exception as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)

        t = threading.Thread(target=spin)
        t.start()
        try:
            for _ in range(200):
                with pt.NativeMode(s, ops=["mm"]) as mode:
                    torch.mm(w, w)
                assert mode.stats()["ops_handled"] == 1  # the other thread's calls are not its
        finally:
            stop.set()
            t.join()
    assert errors == []
