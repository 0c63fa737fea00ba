"""``relax.transform``: byocc's passes under TVM's names (:mod:`byocc.transform`).

A pass object is callable on a module: ``relax.transform.CanonicalizeBindings()(mod)``.
``FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=False,
entry_functions=None)`` takes TVM-style ``(name, pattern[, annotations[, check]])``
tuples or :class:`FusionPattern` entries, highest priority first.
"""

from __future__ import annotations

from byocc.dpl import FusionPattern, PatternCheckContext
from byocc.transform import (
    CanonicalizeBindings,
    DeadCodeElimination,
    EliminateCommonSubexpr,
    FuseOpsByPattern,
    MergeCompositeFunctions,
    ModulePass,
    Pass,
    PassContext,
    PassInfo,
    PassInstrument,
    RunCodegen,
    Sequential,
)

__all__ = [
    "CanonicalizeBindings", "DeadCodeElimination", "EliminateCommonSubexpr", "FuseOpsByPattern", "FusionPattern",
    "MergeCompositeFunctions", "ModulePass", "Pass", "PassContext", "PassInfo", "PassInstrument",
    "PatternCheckContext", "RunCodegen", "Sequential",
]
