"""``from byocc.script import relax as R``: ``@R.function`` and the names annotations use.

``@R.function`` (or ``@R.function(pure=False, private=True)``) on a top-level def parses
its source and returns the :class:`~byocc.ir.Function`; on a method of an
``@I.ir_module`` class it returns the def unchanged (the class decorator parses the whole
class). Annotations (``R.Tensor(...)``, ``R.Tuple(...)``...) are evaluated by Python
when the def runs; they only need to exist here, the parser reads them from the source.
"""

from __future__ import annotations

from byocc.ir import Function, InputError

from ._source import Placeholder, parse_source

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
        return lambda g: function(g, pure=pure, private=private, check_well_formed=check_well_formed)
    if not callable(f) or not hasattr(f, "__qualname__"):
        raise InputError("@R.function decorates a def")
    parts = f.__qualname__.split(".")
    if len(parts) > 1 and parts[-2] != "<locals>":
        return f  # a member of a class; @I.ir_module parses the class
    mod = parse_source(f, "@R.function")
    func = mod[f.__name__] if f.__name__ in mod else next(iter(mod.functions.values()))
    if not isinstance(func, Function):
        raise InputError("@R.function: the source does not define a Relax function")
    return func


__all__ = ["Any", "Callable", "ExternFunc", "Object", "Prim", "Shape", "Tensor", "Tuple", "function"]
