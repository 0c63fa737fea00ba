"""Binding symbolic dimensions and checking values against struct info, at run time.

A *scope* maps :class:`~byocc.ir.TirVar` objects (by identity) to ints. Matching a value
against a struct info first binds every bare dimension variable it meets (``(n, 64)``
binds ``n``), then checks every other dimension expression (``n * 2``) with the bound
values, as TVM's ``MatchCast`` and function-parameter checks do.
"""

from __future__ import annotations

from typing import Any

from byocc.ir import FuncStructInfo
from byocc.ir import InterpretError
from byocc.ir import ObjectStructInfo
from byocc.ir import PrimStructInfo
from byocc.ir import ShapeStructInfo
from byocc.ir import Span
from byocc.ir import StructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import TirVar
from byocc.ir import TupleStructInfo
from byocc.ir.arith import eval_dim
from byocc.ir.prim import dim_text

from .values import Closure
from .values import PackedFunc
from .values import ShapeValue
from .values import describe


class Matcher:
    """Matches values against struct info in one scope; collects deferred checks."""

    def __init__(self, scope: dict, span: Span | None, what: str):
        self.scope = scope
        self.span = span
        self.what = what
        self.deferred: list = []  # (dim expression, actual value, path)

    def fail(self, message: str):
        raise InterpretError(f"{self.what}: {message}", self.span)

    def match(self, si: StructInfo | None, value: Any, path: str = "") -> None:
        import numpy as np

        from byocc.ops.xp import array_module

        tensor_types = (np.ndarray, array_module().ndarray)  # a device run's arrays too
        if si is None or isinstance(si, ObjectStructInfo):
            return
        where = f" (at {path})" if path else ""
        if isinstance(si, TensorStructInfo):
            if not isinstance(value, tensor_types):
                self.fail(f"expected a tensor{where}, got {describe(value)}")
            if si.ndim != -1 and value.ndim != si.ndim:
                self.fail(f"expected a tensor of rank {si.ndim}{where}, got {describe(value)}")
            if si.dtype is not None and _dtype_name(value.dtype) != si.dtype:
                self.fail(f"expected dtype {si.dtype}{where}, got {describe(value)}")
            if si.shape is not None:
                self._dims(si.shape, value.shape, path)
            return
        if isinstance(si, TupleStructInfo):
            if not isinstance(value, tuple) or isinstance(value, ShapeValue):
                self.fail(f"expected a tuple{where}, got {describe(value)}")
            if len(value) != len(si.fields):
                self.fail(f"expected a tuple of {len(si.fields)} fields{where}, got {len(value)}")
            for i, (f, v) in enumerate(zip(si.fields, value)):
                self.match(f, v, f"{path}[{i}]")
            return
        if isinstance(si, ShapeStructInfo):
            if not isinstance(value, ShapeValue):
                self.fail(f"expected a shape{where}, got {describe(value)}")
            if si.ndim != -1 and len(value) != si.ndim:
                self.fail(f"expected a shape of {si.ndim} dims{where}, got {list(value)}")
            if si.values is not None:
                self._dims(si.values, tuple(value), path)
            return
        if isinstance(si, PrimStructInfo):
            if isinstance(value, (*tensor_types, tuple, Closure, PackedFunc, str)):
                self.fail(f"expected a {si.dtype} value{where}, got {describe(value)}")
            if si.value is not None and not isinstance(si.value, (int, float, bool)):
                self._dims((si.value,), (value,), path)
            return
        if isinstance(si, FuncStructInfo) and not isinstance(value, (Closure, PackedFunc)):
            self.fail(f"expected a function{where}, got {describe(value)}")

    def _dims(self, dims: tuple, actual: tuple, path: str) -> None:
        for i, (d, a) in enumerate(zip(dims, actual)):
            if isinstance(d, TirVar):
                bound = self.scope.get(d)
                if bound is None:
                    self.scope[d] = int(a)
                elif bound != a:
                    self._mismatch(d.name, bound, a, i, path)
            elif isinstance(d, (int, float)):
                if d != a:
                    self._mismatch(str(d), d, a, i, path)
            else:
                self.deferred.append((d, a, i, path))

    def _mismatch(self, label: str, want, got, i: int, path: str):
        where = f" of {path}" if path else ""
        need = str(want) if label == str(want) else f"{label} = {want}"
        self.fail(f"dimension {i}{where} is {got}, but {need} is required")

    def finish(self) -> None:
        """Check the dimension expressions once every variable is bound."""
        for d, a, i, path in self.deferred:
            want = eval_dim(d, self.scope, self.span)
            if want != a:
                self._mismatch(dim_text(d), want, a, i, path)
        self.deferred = []


def match_struct_info(si: StructInfo | None, value: Any, scope: dict, span: Span | None, what: str) -> None:
    """Bind the dimension variables of ``si`` from ``value`` into ``scope`` and check the
    rest; raises :class:`~byocc.ir.InterpretError` naming ``what`` on a mismatch."""
    m = Matcher(scope, span, what)
    m.match(si, value)
    m.finish()


def _dtype_name(dt) -> str:
    name = dt.name
    return "bool" if name == "bool_" else name




__all__ = ["Matcher", "match_struct_info"]
