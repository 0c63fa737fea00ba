"""``relax.dpl``: the dataflow pattern language (:mod:`byocc.dpl`), TVM's names."""

from __future__ import annotations

from . import pattern
from .pattern import *

__all__ = ["pattern", *pattern.__all__]  # noqa: PLE0604
