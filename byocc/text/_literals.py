"""Literal tokens of the Relax text: numbers and quoted strings (docs/textual-ir.md#strings, #meaning-of-the-text)."""

from __future__ import annotations

_ESCAPES = {"n": 10, "t": 9, "r": 13, "\\": 92, "'": 39, '"': 34, "0": 0, "a": 7, "b": 8, "f": 12, "v": 11}


def decode_string(raw: str) -> str:
    """A quoted literal's value (docs/textual-ir.md#meaning-of-the-text): ``\\xHH`` escapes are bytes and the bytes are
    read as UTF-8, so ``"caf\\xC3\\xA9"`` is ``café``; bytes that are not UTF-8 are read as
    Latin-1 (what TVM does for every ``\\xHH``)."""
    quote = 3 if raw[:3] in ('"""', "'''") and len(raw) >= 6 else 1
    body = raw[quote:-quote]
    if "\\" not in body:
        return body
    out = bytearray()
    i = 0
    n = len(body)
    while i < n:
        ch = body[i]
        if ch != "\\":
            j = body.find("\\", i)
            if j < 0:
                j = n
            out += body[i:j].encode("utf-8")
            i = j
            continue
        nxt = body[i + 1] if i + 1 < n else ""
        if nxt == "x" and i + 3 < n + 1 and _is_hex(body[i + 2:i + 4]):
            out.append(int(body[i + 2:i + 4], 16))
            i += 4
        elif nxt in ("u", "U"):
            width = 4 if nxt == "u" else 8
            digits = body[i + 2:i + 2 + width]
            if len(digits) == width and _is_hex(digits) and int(digits, 16) <= 0x10FFFF:
                out += chr(int(digits, 16)).encode("utf-8", "surrogatepass")
                i += 2 + width
            else:
                out += b"\\"
                i += 1
        elif nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        else:  # unknown escape: kept as written, as in Python
            out += b"\\"
            i += 1
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return out.decode("latin-1")


def _is_hex(s: str) -> bool:
    return len(s) >= 2 and all(c in "0123456789abcdefABCDEF" for c in s)


def parse_number(raw: str) -> int | float:
    """An int, or a float if the literal has a point or an exponent."""
    if "." in raw or "e" in raw or "E" in raw:
        return float(raw)
    return int(raw)


__all__ = ["decode_string", "parse_number"]
