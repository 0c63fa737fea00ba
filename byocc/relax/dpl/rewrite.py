"""``relax.dpl.rewrite``: TVM's module of ``rewrite_call`` and ``rewrite_bindings``
(:mod:`byocc.transform.rewrite_call`)."""

from __future__ import annotations

from byocc.transform.rewrite_call import rewrite_bindings
from byocc.transform.rewrite_call import rewrite_call

__all__ = ["rewrite_bindings", "rewrite_call"]
