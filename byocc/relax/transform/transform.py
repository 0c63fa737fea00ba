"""``relax.transform``: byocc's passes under TVM's names (:mod:`byocc.transform`).

A pass object is callable on a module: ``relax.transform.CanonicalizeBindings()(mod)``.
``FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=False,
entry_functions=None)`` takes TVM-style ``(name, pattern[, annotations[, check]])``
tuples or :class:`FusionPattern` entries, highest priority first. ``RunCodegen`` finds
the backends' codegens through their records: this module installs a lookup that imports
:mod:`byocc.backends` on its first use (which installs the records' own lookup), so importing
``relax.transform`` does not load the backends.
"""

from __future__ import annotations

import sys

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
from byocc.transform import set_codegen_lookup


def _load_backends_lookup(backend: str):
    """RunCodegen's lookup until ``byocc.backends`` is imported: importing it installs the
    records' lookup in place of this one, which is then asked."""
    import byocc.backends  # noqa: F401  (installs the records' lookup)
    from byocc.transform import run_codegen

    if run_codegen._lookup is _load_backends_lookup:  # nothing replaced it: no records' lookup
        return None
    return run_codegen.find_codegen(backend)


if "byocc.backends.record" not in sys.modules:
    set_codegen_lookup(_load_backends_lookup)

__all__ = [
    "CanonicalizeBindings", "DeadCodeElimination", "EliminateCommonSubexpr", "FuseOpsByPattern", "FusionPattern",
    "MergeCompositeFunctions", "ModulePass", "Pass", "PassContext", "PassInfo", "PassInstrument",
    "PatternCheckContext", "RunCodegen", "Sequential",
]
