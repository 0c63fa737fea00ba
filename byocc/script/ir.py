"""``from byocc.script import ir as I``: ``@I.ir_module`` and ``I.module_attrs``."""

from __future__ import annotations

from typing import Any

from byocc.ir import InputError
from byocc.ir import IRModule

from ._source import caller_scope
from ._source import parse_source


def ir_module(cls: Any) -> IRModule:
    """Decorate a class written in TVMScript: returns the IRModule its source describes."""
    if not isinstance(cls, type):
        raise InputError("@I.ir_module decorates a class")
    return parse_source(cls, "@I.ir_module", caller_scope())


def module_attrs(attrs: dict) -> None:
    """``I.module_attrs({...})`` in a class body: read from the source by the parser."""
    return


__all__ = ["ir_module", "module_attrs"]
