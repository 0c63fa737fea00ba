"""``relax.dpl``: the dataflow pattern language (:mod:`byocc.dpl`), TVM's names,
``PatternContext`` (graph matching, :mod:`byocc.dpl.context`), ``rewrite_call`` and
``rewrite_bindings`` (:mod:`byocc.transform.rewrite_call`)."""

from __future__ import annotations

from . import context
from . import pattern
from . import rewrite
from .context import PatternContext
from .pattern import *  # noqa: F403 (the facade re-exports TVM's names; __all__ lists them)
from .rewrite import rewrite_bindings
from .rewrite import rewrite_call

__all__ = ["PatternContext", "context", "pattern", "rewrite", "rewrite_bindings", "rewrite_call", *pattern.__all__]
