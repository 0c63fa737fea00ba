"""``relax.analysis``: well-formedness and variable analyses (:mod:`byocc.ir`).

``well_formed(mod)`` returns a bool, as TVM releases before 0.27 did (the seed script
asserts it); TVM 0.27's ``well_formed`` returns None and raises on the first problem,
and its ``check_well_formed`` returns the bool. Both are offered.
"""

from __future__ import annotations

from byocc.ir import Function
from byocc.ir import IRModule
from byocc.ir.analysis import all_global_vars
from byocc.ir.analysis import all_vars
from byocc.ir.analysis import analyze_var2value
from byocc.ir.analysis import bound_vars
from byocc.ir.analysis import free_vars
from byocc.ir.analysis import post_order_visit
from byocc.ir.well_formed import well_formed as _problems


def well_formed(obj: IRModule | Function, check_ty: bool = True) -> bool:
    """True when the module (or function) breaks no well-formedness rule
    (docs/partitioning.md#well-formedness)."""
    return not _problems(obj, check_ty)


def check_well_formed(obj: IRModule | Function, check_ty: bool = True) -> bool:
    """Same as :func:`well_formed` (TVM 0.27's name for the boolean answer)."""
    return not _problems(obj, check_ty)


def get_var2val(func: Function) -> dict:
    """Every variable bound by a ``VarBinding`` in ``func`` (nested functions included) ->
    its bound value (TVM's ``relax.analysis.get_var2val``; the mapping pattern matching
    takes as ``var2val``)."""
    return analyze_var2value(func)


def well_formed_problems(obj: IRModule | Function, check_ty: bool = True) -> list:
    """Every problem :func:`well_formed` found, as located :class:`~byocc.ir.WellFormedError`."""
    return _problems(obj, check_ty)


__all__ = [
    "all_global_vars", "all_vars", "bound_vars", "check_well_formed", "free_vars", "get_var2val",
    "post_order_visit", "well_formed", "well_formed_problems",
]
