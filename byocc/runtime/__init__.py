"""byocc.runtime: the numpy interpreter and what runs around it.

``Interpreter(mod).run(args, entry="main")`` executes any module: plain, partitioned
(Composite/Codegen functions are ordinary calls) or codegen'd (``R.call_dps_packed`` runs
the function RunCodegen replaced). Numpy is imported only when something runs.

Building and calling generated libraries: ``build(DIR, ...)`` (``byocc build``),
``load(DIR)`` (the native runner) and ``ByoccRuntimeError``, imported on first use.
"""

from .inputs import TOLERANCES
from .inputs import bind_arguments
from .inputs import compare
from .inputs import random_arguments
from .inputs import tolerance
from .interpreter import Interpreter
from .interpreter import run_module
from .values import Closure
from .values import PackedFunc
from .values import ShapeValue
from .values import describe
from .values import flatten_outputs

_LAZY = {"build": ("byocc.runtime.build", "build"), "load": ("byocc.runtime.native", "load"),
         "ByoccRuntimeError": ("byocc.runtime.native", "ByoccRuntimeError")}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'byocc.runtime' has no attribute {name!r}")


__all__ = [
    "ByoccRuntimeError",
    "TOLERANCES",
    "Closure",
    "Interpreter",
    "PackedFunc",
    "ShapeValue",
    "bind_arguments",
    "build",
    "compare",
    "describe",
    "flatten_outputs",
    "load",
    "random_arguments",
    "run_module",
    "tolerance",
]
