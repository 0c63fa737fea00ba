"""A module under construction with TVM's ``add_function`` de-duplication
(docs/partitioning.md#add_function-de-duplication).

:meth:`FunctionTable.add` returns the name of a structurally equal function already in the
module (the smallest name if several, functions that existed before the pass included), or
adds the function under ``fresh(hint)``, drawing again while the name is taken.

Cost: functions are bucketed by a cheap signature (attributes, parameter count); canonical
forms (``byocc.ir.structural``) are computed only for functions in the bucket of a new one
and cached until the function is replaced, so a 100 000-binding ``main`` is never hashed.
"""

from __future__ import annotations

from typing import Any

from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import IRModule
from byocc.ir import NameSupply
from byocc.ir.structural import canonical_form


def _signature(func: Any) -> tuple | None:
    if not isinstance(func, Function):
        return None
    attrs = tuple(sorted((k, repr(v)) for k, v in func.attrs.items()))
    return (attrs, len(func.params), func.is_pure)


class FunctionTable:
    """Functions by global name, with a de-duplication index. Never mutates the source
    module; :meth:`module` builds the result."""

    def __init__(self, mod: IRModule):
        self._source = mod
        self._funcs: dict[str, Any] = dict(mod.items())
        self._gvars: dict[str, GlobalVar] = {name: mod.get_global_var(name) for name in self._funcs}
        self._buckets: dict[tuple, list[str]] | None = None
        self._canon: dict[str, tuple[Any, Any]] = {}  # name -> (function, canonical form)

    # ------------------------------------------------------------------ reading
    def get(self, name: str) -> Any:
        return self._funcs.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._funcs

    def names(self) -> list[str]:
        return list(self._funcs)

    def global_var(self, name: str) -> GlobalVar:
        gv = self._gvars.get(name)
        if gv is None:
            func = self._funcs[name]
            gv = self._gvars[name] = GlobalVar(name, getattr(func, "struct_info", None))
        return gv

    # ------------------------------------------------------------------ de-duplication
    def _index(self) -> dict[tuple, list[str]]:
        if self._buckets is None:
            self._buckets = {}
            for name, func in self._funcs.items():
                sig = _signature(func)
                if sig is not None:
                    self._buckets.setdefault(sig, []).append(name)
        return self._buckets

    def _canonical(self, name: str) -> Any:
        func = self._funcs[name]
        hit = self._canon.get(name)
        if hit is None or hit[0] is not func:
            hit = self._canon[name] = (func, canonical_form(func))
        return hit[1]

    def find_equal(self, func: Function) -> str | None:
        """The smallest name of a function structurally equal to ``func``, or None."""
        sig = _signature(func)
        names = self._index().get(sig, ()) if sig is not None else ()
        if not names:
            return None
        form = canonical_form(func)
        equal = [n for n in names if self._canonical(n) == form]
        return min(equal) if equal else None

    # ------------------------------------------------------------------ updating
    def add(self, func: Function, hint: str, supply: NameSupply) -> str:
        """TVM ``BlockBuilder.add_function``: de-duplicate, else add under a fresh name."""
        same = self.find_equal(func)
        if same is not None:
            return same
        name = supply.fresh(hint)
        while name in self._funcs:
            name = supply.fresh(hint)
        self._put(name, func)
        self._gvars[name] = GlobalVar(name, func.struct_info)
        return name

    def update(self, name: str, func: Any) -> None:
        """Replace the function called ``name`` (keeps its GlobalVar)."""
        self._drop_from_index(name)
        self._put(name, func)

    def remove(self, name: str) -> None:
        self._drop_from_index(name)
        self._funcs.pop(name, None)
        self._gvars.pop(name, None)
        self._canon.pop(name, None)

    def _put(self, name: str, func: Any) -> None:
        self._funcs[name] = func
        if self._buckets is not None:
            sig = _signature(func)
            if sig is not None:
                self._buckets.setdefault(sig, []).append(name)

    def _drop_from_index(self, name: str) -> None:
        old = self._funcs.get(name)
        if old is None or self._buckets is None:
            return
        sig = _signature(old)
        bucket = self._buckets.get(sig) if sig is not None else None
        if bucket is not None and name in bucket:
            bucket.remove(name)

    def module(self) -> IRModule:
        """The resulting module (attributes and extras of the source kept)."""
        src = self._source
        funcs = {self.global_var(name): func for name, func in self._funcs.items()}
        return IRModule(funcs, attrs=src.attrs, extras=src.extras)


__all__ = ["FunctionTable"]
