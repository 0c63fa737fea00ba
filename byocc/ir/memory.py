"""Pausing Python's cyclic garbage collector around work that allocates many long-lived
objects and no reference cycles (parsing a module, running a pass).

A full collection scans every tracked object, and CPython starts one whenever the objects
that survived since the last one exceed a quarter of the long-lived ones: on a module of
100 000 bindings (millions of IR objects) each costs most of a second, and a pass that builds
a new module triggers several. Reference counting frees what these steps drop; the
collector runs again as soon as the outermost paused step ends.
"""

from __future__ import annotations

import gc
from types import TracebackType


class gc_paused:  # noqa: N801  (used as a context manager, named like one)
    """``with gc_paused():`` runs its body with the cyclic collector off, and turns it back
    on afterwards if it was on before (nested uses keep it off until the outermost ends)."""

    __slots__ = ("_was_enabled",)

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._was_enabled:
            gc.enable()


__all__ = ["gc_paused"]
