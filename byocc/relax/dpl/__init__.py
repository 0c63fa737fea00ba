"""``relax.dpl``: the dataflow pattern language (:mod:`byocc.dpl`), TVM's names,
``PatternContext`` (graph matching, :mod:`byocc.dpl.context`), ``rewrite_call`` and
``rewrite_bindings`` (:mod:`byocc.transform.rewrite_call`)."""

from __future__ import annotations

from byocc.dpl.context import PatternContext
from byocc.transform.rewrite_call import rewrite_bindings
from byocc.transform.rewrite_call import rewrite_call

from . import pattern
from .pattern import *  # noqa: F403 (the facade re-exports TVM's names; __all__ lists them)

__all__ = ["PatternContext", "pattern", "rewrite_bindings", "rewrite_call", *pattern.__all__]
