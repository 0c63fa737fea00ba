"""TIR functions in a Python script: found in the text and cut out before parsing.

byocc does not read TIR. A decorated script's ``@T.prim_func`` members (the callees of
``R.call_tir``) are kept as their text (:class:`byocc.ir.tir.PrimFunc`); the parser sees
the rest of the module with those lines blank (a ``pass`` where each began), so line
numbers stay the file's.
"""

from __future__ import annotations

import re


class TirDef:
    """A ``@T.prim_func`` definition cut out of a script's text (see :func:`cut_prim_funcs`)."""

    __slots__ = ("name", "source", "line", "col", "private")

    def __init__(self, name: str, source: str, line: int, col: int, private: bool) -> None:
        self.name = name
        self.source = source
        self.line = line
        self.col = col
        self.private = private


_PRIM_FUNC_DECORATOR = re.compile(r"[ \t]*@[\w.]*\bprim_func\b")
_DEF_NAME = re.compile(r"[ \t]*def[ \t]+(\w+)")


def cut_prim_funcs(text: str) -> tuple[str, list[TirDef]]:
    """``text`` with every ``@T.prim_func`` definition (decorators, header, body) blanked
    out, line numbers kept, and the definitions. byocc does not read TIR: a script's
    PrimFuncs are kept as text (:class:`byocc.ir.tir.PrimFunc`). One pass over the lines."""
    lines = text.split("\n")
    found: list[TirDef] = []
    i = 0
    while i < len(lines):
        if not _PRIM_FUNC_DECORATOR.match(lines[i]):
            i += 1
            continue
        start = i
        indent = len(lines[i]) - len(lines[i].lstrip())
        j = i
        while j < len(lines) and not _DEF_NAME.match(lines[j]):
            j += 1
        m = _DEF_NAME.match(lines[j]) if j < len(lines) else None
        if m is None:
            break  # no def follows: the parser reports what is there
        depth = 0
        while j < len(lines):  # the header, to its ':' outside brackets
            depth += sum(lines[j].count(c) for c in "([{") - sum(lines[j].count(c) for c in ")]}")
            j += 1
            if depth <= 0:
                break
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped and not stripped.startswith("#") and len(lines[j]) - len(lines[j].lstrip()) <= indent:
                break
            j += 1
        end = j
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1
        definition = lines[start:end]
        source = "\n".join(line[indent:] for line in definition)
        header = "\n".join(definition).split("def ", 1)[0]
        private = bool(re.search(r"\bprivate\s*=\s*True\b", header))
        found.append(TirDef(m.group(1), source, start + 1, indent + 1, private))
        for k in range(start, end):
            lines[k] = ""
        lines[start] = " " * indent + "pass"  # a class of PrimFuncs only still has a body
        i = end
    return "\n".join(lines), found


__all__ = ["TirDef", "cut_prim_funcs"]
