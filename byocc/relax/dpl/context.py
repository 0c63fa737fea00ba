"""``relax.dpl.context``: TVM's module of ``PatternContext`` (graph matching,
:mod:`byocc.dpl.context`)."""

from __future__ import annotations

from byocc.dpl.context import PatternContext

__all__ = ["PatternContext"]
