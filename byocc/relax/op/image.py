"""``relax.op.image``: constructors of the ``relax.image.*`` operators (generated from the registry)."""

from __future__ import annotations

from ._generate import namespace_entries

_ENTRIES = namespace_entries("relax.image.")
globals().update(_ENTRIES)

__all__ = sorted(_ENTRIES)  # noqa: PLE0605  (generated from the registry)
