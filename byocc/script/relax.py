"""``from byocc.script import relax as R``: ``@R.function`` and the names annotations use.

``@R.function`` (or ``@R.function(pure=False, private=True)``) on a top-level def parses
its source and returns the :class:`~byocc.ir.Function`; on a method of an
``@I.ir_module`` class it returns the def unchanged (the class decorator parses the whole
class). Annotations (``R.Tensor(...)``, ``R.Tuple(...)``...) are evaluated by Python
when the def runs; they only need to exist here, the parser reads them from the source.
"""

from __future__ import annotations

from byocc.ir import Function
from byocc.ir import InputError

from ._source import Placeholder
from ._source import caller_scope
from ._source import parse_source

# Names Python evaluates while defining a decorated def or class (annotations, members).
Tensor = Placeholder("R.Tensor")
Tuple = Placeholder("R.Tuple")
Shape = Placeholder("R.Shape")
Object = Placeholder("R.Object")
Any = Placeholder("R.Any")
Prim = Placeholder("R.Prim")
Callable = Placeholder("R.Callable")
ExternFunc = Placeholder("R.ExternFunc")


def function(f: object = None, *, pure: bool = True, private: bool = False,
             check_well_formed: bool = True) -> object:
    """Decorator for a Relax function written in TVMScript (see the module docstring)."""
    if f is None:
        scope = caller_scope()  # the namespace of the decorated def
        return lambda g: _function(g, scope)
    if _is_member(f):
        return f  # a method of a class; @I.ir_module parses the whole class
    return _function(f, caller_scope())


def _is_member(f: object) -> bool:
    parts = getattr(f, "__qualname__", "").split(".")
    return len(parts) > 1 and parts[-2] != "<locals>"


def _function(f: object, scope: dict) -> object:
    if not callable(f) or not hasattr(f, "__qualname__"):
        raise InputError("@R.function decorates a def")
    if _is_member(f):
        return f
    mod = parse_source(f, "@R.function", scope)
    func = mod[f.__name__] if f.__name__ in mod else next(iter(mod.functions.values()))
    if not isinstance(func, Function):
        raise InputError("@R.function: the source does not define a Relax function")
    return func


__all__ = ["Any", "Callable", "ExternFunc", "Object", "Prim", "Shape", "Tensor", "Tuple", "function"]

# The IRBuilder statements TVMScript's ``R`` also exports (byocc.script.ir_builder.relax):
# ``R.func_name``, ``R.arg``, ``R.emit``, ``with R.dataflow() as frame``, ``R.output``...
from .ir_builder.relax import arg  # noqa: E402
from .ir_builder.relax import dataflow  # noqa: E402
from .ir_builder.relax import emit  # noqa: E402
from .ir_builder.relax import emit_match_cast  # noqa: E402
from .ir_builder.relax import emit_var_binding  # noqa: E402
from .ir_builder.relax import emit_with_ty  # noqa: E402
from .ir_builder.relax import emit_with_type  # noqa: E402
from .ir_builder.relax import func_attr  # noqa: E402
from .ir_builder.relax import func_name  # noqa: E402
from .ir_builder.relax import func_ret_struct_info  # noqa: E402
from .ir_builder.relax import func_ret_ty  # noqa: E402
from .ir_builder.relax import func_ret_type  # noqa: E402
from .ir_builder.relax import func_ret_value  # noqa: E402
from .ir_builder.relax import output  # noqa: E402

__all__ += [
    "arg", "dataflow", "emit", "emit_match_cast", "emit_var_binding", "emit_with_ty", "emit_with_type",
    "func_attr", "func_name", "func_ret_struct_info", "func_ret_ty", "func_ret_type", "func_ret_value",
    "output",
]
