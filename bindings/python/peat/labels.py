"""How results name an op's outputs; one home for peat.Playback and
peat.torch (this module needs no torch)."""
from __future__ import annotations


def output_label(op: str, output_name: str, output: int, n_outputs: int) -> str:
    """The label of output `output` of op `op` in signatures, verdicts and
    tables: the op alone when it has one output, else "<op>[<output name>]"
    ("conv1/aten::convolution_backward[grad_weight]"), the index standing in
    for a name the record does not give."""
    if n_outputs <= 1:
        return op
    return f"{op}[{output_name or output}]"
