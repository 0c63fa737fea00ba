"""``relax.dpl``: the dataflow pattern language (:mod:`byocc.dpl`), TVM's names."""

from __future__ import annotations

from .pattern import *  # noqa: F403
from .pattern import __all__ as _pattern_all

__all__ = ["pattern", *_pattern_all]
