"""Module paths and phase for peat.torch: whether the autograd engine runs a
backward pass, and the forward/backward hooks that name ops after the
module that runs them."""
from __future__ import annotations

import torch

from .torch_ops import _tensors

# A graph node made at import (outside any dispatch mode, where autograd runs);
# asking the engine about it fails unless a backward pass is running.
with torch.enable_grad():
    _PROBE_NODE = (torch.ones(1, requires_grad=True) * 2).grad_fn


def in_backward() -> bool:
    """True while the autograd engine runs a backward pass on this thread."""
    try:
        torch._C._will_engine_execute_node(_PROBE_NODE)
        return True
    except RuntimeError:
        return False


class _ModuleTracker:
    """Forward hooks keep a stack of module paths; in backward, a hook on each
    module's output tensors names the ops that follow with that module (the
    innermost module owning the tensor)."""

    def __init__(self, model, mode):
        self.stack = []
        self.frames = []  # per module on the stack: [handled ops at entry, {unhandled op names}]
        self.backward_path = ""
        self.handles = []
        for name, module in model.named_modules():
            path = name or type(module).__name__

            def pre(mod, inputs, path=path, root=module is model):
                if root:  # a forward that raised left its modules on the stack
                    self.stack.clear()
                    self.frames.clear()
                if not self.stack:
                    self.backward_path = ""
                self.stack.append(path)
                self.frames.append([mode.ops_handled, set()])

            def post(mod, inputs, output, path=path):
                self.stack.pop()
                entry, unhandled = self.frames.pop()
                if mode.ops_handled == entry and unhandled:
                    mode._warn_unseen(path, type(mod).__name__, unhandled)
                for t in _tensors(output):
                    if t.requires_grad and not getattr(t, "_peat_named", False):
                        t._peat_named = True

                        def hook(grad, path=path):
                            self.backward_path = path
                            return None
                        t.register_hook(hook)

            self.handles.append(module.register_forward_pre_hook(pre))
            self.handles.append(module.register_forward_hook(post))

    def note_unhandled(self, packet: str) -> None:
        """An op the mode passed through ran inside the innermost module."""
        if self.frames:
            self.frames[-1][1].add(packet)

    def path(self, phase: str) -> str:
        if self.stack:
            return self.stack[-1]
        return self.backward_path if phase == "backward" else ""

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles.clear()
