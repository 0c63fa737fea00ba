"""byocc.runtime: the numpy interpreter and what runs around it.

``Interpreter(mod).run(args, entry="main")`` executes any module: plain, partitioned
(Composite/Codegen functions are ordinary calls) or codegen'd (``R.call_dps_packed`` runs
the function RunCodegen replaced). Numpy is imported only when something runs.
"""

from .inputs import TOLERANCES, bind_arguments, compare, random_arguments, tolerance
from .interpreter import Interpreter, run_module
from .values import Closure, PackedFunc, ShapeValue, describe, flatten_outputs

__all__ = [
    "TOLERANCES",
    "Closure",
    "Interpreter",
    "PackedFunc",
    "ShapeValue",
    "bind_arguments",
    "compare",
    "describe",
    "flatten_outputs",
    "random_arguments",
    "run_module",
    "tolerance",
]
