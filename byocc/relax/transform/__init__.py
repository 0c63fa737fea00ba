"""``relax.transform``: byocc's passes under TVM's names (see :mod:`.transform`).

TVM keeps the pass constructors in ``tvm.relax.transform.transform`` and re-exports them
here; both import paths work.
"""

from __future__ import annotations

from .transform import CanonicalizeBindings
from .transform import DeadCodeElimination
from .transform import EliminateCommonSubexpr
from .transform import FuseOpsByPattern
from .transform import FusionPattern
from .transform import MergeCompositeFunctions
from .transform import ModulePass
from .transform import Pass
from .transform import PassContext
from .transform import PassInfo
from .transform import PassInstrument
from .transform import PatternCheckContext
from .transform import RunCodegen
from .transform import Sequential

__all__ = [
    "CanonicalizeBindings", "DeadCodeElimination", "EliminateCommonSubexpr", "FuseOpsByPattern", "FusionPattern",
    "MergeCompositeFunctions", "ModulePass", "Pass", "PassContext", "PassInfo", "PassInstrument",
    "PatternCheckContext", "RunCodegen", "Sequential",
]
