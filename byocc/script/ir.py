"""``from byocc.script import ir as I``: ``@I.ir_module`` and ``I.module_attrs``."""

from __future__ import annotations

from typing import Any

from byocc.ir import InputError
from byocc.ir import IRModule

from ._source import caller_scope
from ._source import parse_source


def ir_module(mod: Any = None, *, check_well_formed: bool = True, s_tir: bool = False) -> Any:
    """Decorate a class written in TVMScript: returns the IRModule its source describes.

    ``@I.ir_module`` or, with TVM's options, ``@I.ir_module(s_tir=True)`` (the options
    change nothing byocc reads). Names the class does not define are looked up where the
    decorator is applied (the enclosing function's locals, then the module's globals)."""
    if mod is None:
        scope = caller_scope()

        def decorate(cls: Any) -> IRModule:
            return _parse(cls, scope)

        return decorate
    return _parse(mod, caller_scope())


def _parse(cls: Any, scope: dict[str, Any]) -> IRModule:
    if not isinstance(cls, type):
        raise InputError("@I.ir_module decorates a class")
    return parse_source(cls, "@I.ir_module", scope)


def module_attrs(attrs: dict) -> None:
    """``I.module_attrs({...})`` in a class body: read from the source by the parser."""
    return


__all__ = ["ir_module", "module_attrs"]
