"""IRModule: an immutable map from global name to function, plus module attributes."""

from __future__ import annotations

from collections.abc import ItemsView
from collections.abc import Iterator
from collections.abc import Mapping
from typing import Any

from .expr import ExternFunc
from .expr import Function
from .expr import GlobalVar

# What a module maps names to.
BaseFunc = Function | ExternFunc


class IRModule:
    """Immutable. ``functions`` maps name -> Function | ExternFunc (insertion order kept,
    printing sorts). ``global_vars`` maps name -> the GlobalVar calls refer to.
    Updates (:meth:`with_function`, :meth:`without`) return new modules sharing the rest.

    ``constants`` optionally carries external data kept with the module (e.g. what
    RunCodegen's codegens returned) under ``extras``.
    """

    __slots__ = ("_functions", "_gvars", "attrs", "extras")

    def __init__(
        self,
        functions: Mapping[str, BaseFunc] | Mapping[GlobalVar, BaseFunc] | Mapping[str | GlobalVar, BaseFunc] | None = None,
        attrs: Mapping[str, Any] | None = None,
        global_vars: Mapping[str, GlobalVar] | None = None,
        extras: Mapping[str, Any] | None = None,
    ) -> None:
        funcs: dict[str, BaseFunc] = {}
        gvars: dict[str, GlobalVar] = {}
        for key, func in (functions or {}).items():
            name = key.name_hint if isinstance(key, GlobalVar) else key
            funcs[name] = func
            if isinstance(key, GlobalVar):
                gvars[name] = key
        for name, gv in (global_vars or {}).items():
            if name in funcs:
                gvars.setdefault(name, gv)
        for name in funcs:
            if name not in gvars:
                gvars[name] = GlobalVar(name)
        self._functions = funcs
        self._gvars = gvars
        self.attrs = dict(attrs or {})
        self.extras = dict(extras or {})

    # ------------------------------------------------------------------ reading
    @property
    def functions(self) -> dict[str, BaseFunc]:
        return dict(self._functions)

    def __getitem__(self, key: str | GlobalVar) -> BaseFunc:
        name = key.name_hint if isinstance(key, GlobalVar) else key
        return self._functions[name]

    def __contains__(self, key: object) -> bool:
        name = key.name_hint if isinstance(key, GlobalVar) else key
        return name in self._functions

    def __iter__(self) -> Iterator[str]:
        return iter(self._functions)

    def __len__(self) -> int:
        return len(self._functions)

    def items(self) -> ItemsView[str, BaseFunc]:
        return self._functions.items()

    def get_global_var(self, name: str) -> GlobalVar:
        return self._gvars[name]

    def get_global_vars(self) -> list[GlobalVar]:
        return list(self._gvars.values())

    def names(self) -> list[str]:
        return list(self._functions)

    # ------------------------------------------------------------------ updating
    def with_function(self, name: str, func: BaseFunc, gvar: GlobalVar | None = None) -> IRModule:
        """A module with ``name`` bound to ``func`` (replacing any previous one)."""
        new = self._copy()
        new._functions[name] = func
        if gvar is not None:
            new._gvars[name] = gvar
        elif name not in new._gvars:
            new._gvars[name] = GlobalVar(name)
        return new

    def without(self, *names: str) -> IRModule:
        new = self._copy()
        for name in names:
            new._functions.pop(name, None)
            new._gvars.pop(name, None)
        return new

    def with_attrs(self, attrs: Mapping[str, Any]) -> IRModule:
        new = self._copy()
        new.attrs = dict(attrs)
        return new

    def with_extras(self, **extras: Any) -> IRModule:
        new = self._copy()
        new.extras.update(extras)
        return new

    def _copy(self) -> IRModule:
        new = IRModule.__new__(IRModule)
        new._functions = dict(self._functions)
        new._gvars = dict(self._gvars)
        new.attrs = dict(self.attrs)
        new.extras = dict(self.extras)
        return new

    # ------------------------------------------------------------------ text
    def script(self, **config: Any) -> str:
        from byocc.text.printer import print_module  # allowed upward import (design.md)

        return print_module(self, **config)

    def show(self, **config: Any) -> None:
        print(self.script(**config))

    def __str__(self) -> str:
        return self.script()
