"""Replaying recorded aten calls in torch: replay() against a torch candidate
through the analyzer, and candidates for peat.Playback that run the
recorded op."""
from __future__ import annotations

import torch

from .analyzer import analyze
from .labels import output_label
from .torch_ops import _by_name, _clone_layout, _tensors, rebuild_args, reduction_length

def replay(reader, op_glob: str, candidate=None, *, output=None, num_threads: int = 0) -> dict:
    """Plays the recorded calls of ops matching `op_glob` in a trace (a
    peat.TraceReader) back against a torch candidate and compares the
    candidate's outputs with the recorded (golden) outputs through the
    analyzer.

    candidate(op, inputs, attrs) -> tensor or tuple: `op` the recorded aten
    name ("mm"), `inputs` the recorded input tensors (torch, in order, with
    the strides they were recorded with), `attrs` the recorded attributes.
    Default: the aten op itself on the inputs; wrap it with
    `replay_candidate(...)` to run it under an autocast / float64 / oneDNN /
    thread-count candidate.
    Every output is compared (`output`: one index only). Returns {name:
    merged Signature}: the op name for a single-output op, "<op>[<output
    name>]" for each output of a multi-output one ("...convolution_backward
    [grad_weight]"), with " K=<k>" appended when an op's calls have several
    reduction lengths K."""
    candidate = candidate or replay_candidate()
    sigs = {}
    for rec in reader.records(kinds="op", op_glob=op_glob):
        packet = rec.name.rsplit("aten::", 1)[-1]
        ins = [reader.load(rec.index, "input", i, layout=True) for i in range(rec.n_inputs)]
        attrs = reader.attrs(rec.index)
        results = _tensors(candidate(packet, ins, attrs))
        wanted = range(rec.n_outputs) if output is None else [output]
        for i in wanted:
            golden = reader.load(rec.index, "output", i, as_torch=True)
            out = results[i] if i < len(results) else None
            if out is None:
                raise ValueError(f"peat: {rec.name} (record {rec.index}) gave {len(results)} "
                                 f"outputs, the record has {rec.n_outputs}")
            k = reduction_length(packet, ins)
            sig = analyze(golden, out.detach(), reduction_length=k, num_threads=num_threads)
            key = (output_label(rec.name, reader.tensor_info(rec.index, "output", i).name, i,
                                rec.n_outputs), k)
            sigs[key] = sigs[key].merge(sig) if key in sigs else sig
    return _by_name(sigs)


def _call_recorded(packet, inputs, attrs, wrapper):
    """Runs the recorded aten op on the recorded inputs and attributes (under
    `wrapper`), the arguments it writes to copied first so that the
    recorded inputs stay as they were (a second run sees the same), and
    returns its output tensors followed by those arguments as it left
    them, in the order the record lists its outputs."""
    func = getattr(torch.ops.aten, packet).default
    args = rebuild_args(inputs, attrs)
    written = [int(i) for i in attrs.get("written_args", [])]
    for i in written:
        if isinstance(args[i], torch.Tensor):
            args[i] = _clone_layout(args[i])
    result = func(*args) if wrapper is None else wrapper(func, tuple(args), {})
    return _tensors(result) + [args[i] for i in written if isinstance(args[i], torch.Tensor)]


def replay_candidate(wrapper=None):
    """A replay candidate running the recorded aten op on the recorded inputs
    and attributes (rebuild_args); `wrapper` (a dispatch-mode candidate such
    as autocast_candidate(bf16)) changes how it runs."""
    def candidate(packet, inputs, attrs):
        return tuple(_call_recorded(packet, inputs, attrs, wrapper))
    return candidate


def playback_candidate(wrapper=None):
    """A candidate for peat.Playback (attrs "list") that runs the recorded
    aten op in torch on the recorded inputs (with their recorded strides)
    and attributes, under `wrapper`
    (a dispatch-mode candidate: autocast_candidate(bf16), float64_candidate(),
    mkldnn_candidate(False), threads_candidate(1), ...; None = the op
    itself), and writes the outputs the library compares with the recorded
    golden ones:

        peat.Playback(reader, candidate=pt.playback_candidate(pt.float64_candidate()),
                      op_glob="*aten::mm").run()
    """
    def candidate(inputs, outputs, call):
        if call is None:
            raise ValueError("peat: playback_candidate needs attrs mode 'list'")
        packet = call.op.rsplit("aten::", 1)[-1]
        ins = [t if isinstance(t, torch.Tensor) else torch.from_numpy(t) for t in inputs]
        results = _call_recorded(packet, ins, call.attrs, wrapper)
        if len(results) != len(outputs):
            raise ValueError(f"peat: {call.op} gave {len(results)} outputs, the record has "
                             f"{len(outputs)}")
        for out, r in zip(outputs, results):
            target = out if isinstance(out, torch.Tensor) else torch.from_numpy(out)
            target.copy_(r.detach())
        return 0
    candidate.__name__ = f"playback_{getattr(wrapper, '__name__', 'aten')}"
    return candidate

