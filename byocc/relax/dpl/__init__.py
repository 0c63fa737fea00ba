"""``relax.dpl``: the dataflow pattern language (:mod:`byocc.dpl`), TVM's names, and
``rewrite_call`` (:mod:`byocc.transform.rewrite_call`)."""

from __future__ import annotations

from byocc.transform.rewrite_call import rewrite_call

from . import pattern
from .pattern import *  # noqa: F403 (the facade re-exports TVM's names; __all__ lists them)

__all__ = ["pattern", "rewrite_call", *pattern.__all__]
