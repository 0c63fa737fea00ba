"""Literal spelling for the printer: floats, strings, names (docs/textual-ir.md#float-formatting, #strings, #variable-names).

These are pure functions of their argument; the printer proper (``printer.py``) decides
where each literal goes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

__all__ = ["NameTable", "format_float", "quote_string", "sanitize_name"]


def format_float(value: float) -> str:
    """A double as TVM's Python doc printer writes it (docs/textual-ir.md#float-formatting).

    Infinite and NaN values are quoted (C++ stream spelling, so a NaN with the sign bit
    set reads ``"-nan"``); integral values use ``%.1f``; everything else ``%.17g``.
    """
    v = float(value)
    if math.isinf(v):
        return '"inf"' if v > 0 else '"-inf"'
    if math.isnan(v):
        return '"-nan"' if math.copysign(1.0, v) < 0 else '"nan"'
    if v.is_integer():
        return f"{v:.1f}"
    return f"{v:.17g}"


_PLAIN = re.compile(r'[ !#-\[\]-~]*\Z')  # printable ASCII except '"' and '\'
_ESCAPES = {0x22: '\\"', 0x5C: "\\\\", 0x09: "\\t", 0x0D: "\\r", 0x0A: "\\n"}
_HEX = "0123456789ABCDEF"


def escape_string(text: str) -> str:
    """The body of a double-quoted literal: TVM's byte-wise ``StrEscape`` (docs/textual-ir.md#strings)."""
    if _PLAIN.match(text):
        return text
    out = []
    for b in text.encode("utf-8", "surrogateescape"):
        if 0x20 <= b <= 0x7E and b != 0x22 and b != 0x5C:
            out.append(chr(b))
        else:
            esc = _ESCAPES.get(b)
            out.append(esc if esc is not None else "\\x" + _HEX[b >> 4] + _HEX[b & 15])
    return "".join(out)


def quote_string(text: str) -> str:
    """``"..."`` with TVM's escaping: ``"café"`` -> ``"caf\\xC3\\xA9"``."""
    return '"' + escape_string(text) + '"'


_IDENT = re.compile(r"[A-Za-z0-9_]+\Z")
_SANITIZED: dict[str, str] = {}


def sanitize_name(hint: str) -> str:
    """Every byte that is not an ASCII letter, digit or ``_`` becomes ``_``; empty -> ``v``."""
    if not hint:
        return "v"
    got = _SANITIZED.get(hint)
    if got is not None:
        return got
    if _IDENT.match(hint):
        name = hint
    else:
        name = "".join(
            chr(b) if (48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122 or b == 95) else "_"
            for b in hint.encode("utf-8", "surrogateescape")
        )
    if len(_SANITIZED) < 100_000:
        _SANITIZED[hint] = name
    return name


class NameTable:
    """The set of printed names currently in use, with TVM's de-duplication (docs/textual-ir.md#variable-names).

    ``take(base)`` returns ``base`` if free, else the first free ``base_1``, ``base_2``, ...
    ``release(name)`` frees a name again. A per-base lower bound on the first free suffix
    keeps repeated hints (100 000 ``lv``) linear instead of quadratic.
    """

    __slots__ = ("_next", "taken")

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self.taken: set[str] = set(reserved)
        # invariant: for every base b, all of b_1 .. b_(next[b]-1) are taken
        self._next: dict[str, int] = {}

    def take(self, base: str) -> str:
        taken = self.taken
        if base not in taken:
            taken.add(base)
            return base
        i = self._next.get(base, 1)
        while True:
            cand = f"{base}_{i}"
            if cand not in taken:
                break
            i += 1
        self._next[base] = i + 1
        taken.add(cand)
        return cand

    def release(self, name: str) -> None:
        self.taken.discard(name)
        base, sep, num = name.rpartition("_")
        if sep and num.isdigit() and num.isascii():
            j = int(num)
            if j >= 1:
                cur = self._next.get(base)
                if cur is not None and j < cur:
                    self._next[base] = j
