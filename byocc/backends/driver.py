"""Backend records at work: preparing a module for backends and TVM's partition drivers.

Both the CLI (``byocc partition --backend NAME [--prepare] [--backend-steps]``) and the
Python facade (``partition_for_cutlass``, ``partition_for_cublas``) come here: the records
(:mod:`byocc.backends.record`) give the layout, the rewrites and the steps after fusion,
and ``transform``'s passes get them as parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from typing import Final

from byocc.ir import IRModule
from byocc.transform import FuseOpsByPattern
from byocc.transform import Pass
from byocc.transform import Sequential
from byocc.transform import preparation_passes
from byocc.transform import rewrite_functions

from .record import Backend
from .record import FunctionRewrite
from .record import ModuleStep
from .record import get_backend

#: ``layout=PREFERRED``: the first backend's ``preferred_layout`` that is not None.
PREFERRED: Final = "preferred"


def _records(backend: str | Backend | Sequence[str | Backend]) -> list[Backend]:
    items = [backend] if isinstance(backend, (str, Backend)) else list(backend)
    return [b if isinstance(b, Backend) else get_backend(b) for b in items]


def prepare_passes(backend: str | Backend | Sequence[str | Backend], layout: str | None = PREFERRED,
                   fold_batch_norm: bool = True) -> list[Pass]:
    """The passes :func:`prepare_for_backend` runs for ``backend`` (one or several)."""
    records = _records(backend)
    wanted = next((r.preferred_layout for r in records if r.preferred_layout is not None), None)
    if wanted is None or layout is None:
        chosen = None  # no backend wants a layout, or the caller keeps it
    else:
        chosen = wanted if layout == PREFERRED else layout
    return preparation_passes(chosen, fold_batch_norm)


def prepare_for_backend(mod: IRModule, backend: str | Backend | Sequence[str | Backend],
                        layout: str | None = PREFERRED, fold_batch_norm: bool = True) -> IRModule:
    """``mod`` made ready for partitioning for ``backend`` (the CLI's ``--prepare``): constant
    and BatchNorm folding, then (when a backend has a ``preferred_layout``) convolutions to
    that layout, or to ``layout`` when one is given; ``layout=None`` keeps the layout.
    ``backend`` may name several backends (repeated ``--backend``); the first that prefers a
    layout decides it."""
    return Sequential(prepare_passes(backend, layout, fold_batch_norm), name="prepare")(mod)


def backend_steps(backends: Sequence[str | Backend]) -> tuple[list[FunctionRewrite], list[ModuleStep]]:
    """``(rewrites, steps after fusion)`` of ``backends``, each list in the order given: what
    :func:`byocc.transform.partition` takes as ``rewrites`` and ``post_fusion``."""
    records = _records(backends)
    return ([r for b in records for r in b.rewrites], [s for b in records for s in b.post_partition])


def partition_for_backend(mod: IRModule, backend: str | Backend, *, annotate_codegen: bool = True,
                          bind_constants: bool = False, **options: Any) -> IRModule:
    """TVM's ``partition_for_<backend>`` driver, from the record: its rewrites on every Relax
    function (called with ``options``, e.g. ``use_flash_mqa``), FuseOpsByPattern over its
    pattern table, then its steps after fusion (docs/codegen.md#partition-drivers)."""
    (record,) = _records(backend)
    mod = rewrite_functions(mod, record.rewrites, **options)
    mod = FuseOpsByPattern(record.patterns(), bind_constants=bind_constants,
                           annotate_codegen=annotate_codegen)(mod)
    for step in record.post_partition:
        mod = step(mod)
    return mod


__all__ = ["PREFERRED", "backend_steps", "partition_for_backend", "prepare_for_backend", "prepare_passes"]
