"""``relax.transform``: byocc's passes under TVM's names (:mod:`byocc.transform`).

A pass object is callable on a module: ``relax.transform.CanonicalizeBindings()(mod)``.
``FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=False,
entry_functions=None)`` takes TVM-style ``(name, pattern[, annotations[, check]])``
tuples or :class:`FusionPattern` entries, highest priority first. ``RunCodegen`` finds
the backends' codegens through their records: importing this module imports
:mod:`byocc.backends`, which installs that lookup.
"""

from __future__ import annotations

import byocc.backends  # noqa: F401  (installs RunCodegen's codegen lookup)
from byocc.dpl import FusionPattern
from byocc.dpl import PatternCheckContext
from byocc.transform import CanonicalizeBindings
from byocc.transform import DeadCodeElimination
from byocc.transform import EliminateCommonSubexpr
from byocc.transform import FuseOpsByPattern
from byocc.transform import MergeCompositeFunctions
from byocc.transform import ModulePass
from byocc.transform import Pass
from byocc.transform import PassContext
from byocc.transform import PassInfo
from byocc.transform import PassInstrument
from byocc.transform import RunCodegen
from byocc.transform import Sequential

__all__ = [
    "CanonicalizeBindings", "DeadCodeElimination", "EliminateCommonSubexpr", "FuseOpsByPattern", "FusionPattern",
    "MergeCompositeFunctions", "ModulePass", "Pass", "PassContext", "PassInfo", "PassInstrument",
    "PatternCheckContext", "RunCodegen", "Sequential",
]
