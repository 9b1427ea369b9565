"""Context-manager plumbing shared by the wrappers of library handles.

A wrapper defines close() (idempotent); these bases add `with` support and,
for wrappers that own their handle outright, release on garbage collection.
"""
from __future__ import annotations


class ClosesOnExit:
    """`with obj:` closes obj on exit."""

    def close(self) -> None:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class OwnsHandle(ClosesOnExit):
    """Also closes when garbage-collected (errors at interpreter shutdown are ignored)."""

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
