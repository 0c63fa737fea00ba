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


class FunctionMap(Mapping[GlobalVar, BaseFunc]):
    """``IRModule.functions``: GlobalVar -> function, in the module's order. A key is
    matched by name, so the module's own GlobalVar, any GlobalVar of that name, or the
    name itself finds the function."""

    __slots__ = ("_by_name", "_gvars")

    def __init__(self, funcs: Mapping[GlobalVar, BaseFunc]) -> None:
        self._gvars = {gv.name_hint: gv for gv in funcs}
        self._by_name = {gv.name_hint: f for gv, f in funcs.items()}

    def __getitem__(self, key: GlobalVar | str) -> BaseFunc:
        return self._by_name[key.name_hint if isinstance(key, GlobalVar) else key]

    def __contains__(self, key: object) -> bool:
        return (key.name_hint if isinstance(key, GlobalVar) else key) in self._by_name

    def __iter__(self) -> Iterator[GlobalVar]:
        return iter(self._gvars.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{gv!r}: {type(f).__name__}" for gv, f in zip(self, self.values())) + "}"


class IRModule:
    """Immutable for passes. ``functions`` maps each GlobalVar -> Function | ExternFunc, as
    TVM's (insertion order kept, printing sorts); ``items()`` and ``names()`` are by name.
    ``global_vars`` maps name -> the GlobalVar calls refer to. TVM's ``mod[name] = f``
    works too (it updates this module; no pass does).
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
    def functions(self) -> FunctionMap:
        """The functions keyed by their GlobalVar, as TVM's ``IRModule.functions`` (a
        snapshot; a name also looks one up). :meth:`items` is keyed by name."""
        return FunctionMap({self._gvars[name]: f for name, f in self._functions.items()})

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

    # ------------------------------------------------------------------ TVM's mutable API
    def __setitem__(self, key: str | GlobalVar, func: BaseFunc) -> None:
        """``mod["main"] = f`` (TVM's ``IRModule.__setitem__``): binds ``key`` in *this*
        module, keeping the GlobalVar already bound to that name. Passes never mutate a
        module; this is for scripts building one."""
        name = key.name_hint if isinstance(key, GlobalVar) else key
        if not isinstance(name, str):
            raise TypeError(f"an IRModule is keyed by a name or a GlobalVar, not {type(key).__name__}")
        if not isinstance(func, (Function, ExternFunc)):
            raise TypeError(f"an IRModule holds functions, not {type(func).__name__}")
        self._functions[name] = func
        if isinstance(key, GlobalVar) and name not in self._gvars:
            self._gvars[name] = key
        self._gvars.setdefault(name, GlobalVar(name))

    def __delitem__(self, key: str | GlobalVar) -> None:
        name = key.name_hint if isinstance(key, GlobalVar) else key
        del self._functions[name]
        self._gvars.pop(name, None)

    def update_func(self, gvar: GlobalVar, func: BaseFunc) -> None:
        """``mod[gvar] = func`` (TVM's name)."""
        self[gvar] = func

    def clone(self) -> IRModule:
        """A copy that later ``mod[name] = f`` on either side leaves the other alone."""
        return self._copy()

    def functions_items(self) -> list[tuple[GlobalVar, BaseFunc]]:
        """``(GlobalVar, function)`` pairs sorted by name (TVM's ``functions_items``)."""
        return sorted(self.functions.items(), key=lambda item: item[0].name_hint)

    def update(self, other: IRModule) -> None:
        """Add (or replace) every function of ``other`` in this module (TVM's ``update``)."""
        for name, func in other.items():
            self[other.get_global_var(name)] = func

    def same_as(self, other: object) -> bool:
        return self is other

    def without_attr(self, key: str) -> IRModule:
        return self.with_attrs({k: v for k, v in self.attrs.items() if k != key})

    def get_attr(self, key: str) -> Any:
        return self.attrs.get(key)

    def with_attr(self, key: str, value: Any) -> IRModule:
        return self.with_attrs({**self.attrs, key: value})

    @staticmethod
    def from_expr(func: BaseFunc) -> IRModule:
        """A module holding ``func`` as ``main`` (TVM's ``IRModule.from_expr``)."""
        return IRModule({"main": func})

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
        from byocc.text.printer import print_module  # docs/architecture.md#the-one-upward-import

        return print_module(self, **config)

    def show(self, **config: Any) -> None:
        print(self.script(**config))

    def __str__(self) -> str:
        return self.script()
