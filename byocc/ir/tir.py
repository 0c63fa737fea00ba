"""TIR functions (``@T.prim_func`` members of a module), kept as their TVMScript text.

byocc does not model TIR: a PrimFunc a Python script defines beside its Relax functions
(the callee of ``R.call_tir(cls.f, ...)``) is carried through the passes unchanged, as the
text it was written in. Two PrimFuncs are structurally equal when their texts are the same
token for token (comments, layout and the function's own name aside).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from .diagnostics import Span
from .expr import Expr
from .struct_info import FuncStructInfo
from .struct_info import ObjectStructInfo
from .struct_info import StructInfo

_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|#[^\n]*|\w+|\S')


@dataclass(frozen=True, slots=True, eq=False)
class PrimFunc(Expr):
    """A TIR function as written: ``source`` is the definition, decorators included,
    dedented; ``attrs`` holds ``global_symbol`` unless it is private."""

    source: str
    attrs: dict[str, Any] = field(default_factory=dict)
    struct_info: StructInfo | None = FuncStructInfo(None, ObjectStructInfo(), True)
    span: Span | None = None

    @property
    def key(self) -> tuple[str, ...]:
        """The tokens of the definition without comments, layout and its name: what
        structural equality compares."""
        tokens = [t for t in _TOKEN.findall(self.source) if not t.startswith("#")]
        for i, t in enumerate(tokens[:-1]):
            if t == "def":
                tokens[i + 1] = ""
                break
        return tuple(tokens)


__all__ = ["PrimFunc"]
