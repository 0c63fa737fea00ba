"""``relax.dpl``: the dataflow pattern language (:mod:`byocc.dpl`), TVM's names, and
``rewrite_call`` (:mod:`byocc.transform.rewrite_call`)."""

from __future__ import annotations

from byocc.transform.rewrite_call import rewrite_call

from . import pattern
from .pattern import *

__all__ = ["pattern", "rewrite_call", *pattern.__all__]  # noqa: PLE0604
