"""Safe C++ text from model-derived names (docs/codegen.md#c-abi; issue: a crafted model
must not inject code into the sources a user compiles).

Every name that comes from the model reaches C++ only through one of these:

* :func:`c_identifier` - a global symbol or other name used as an identifier: validated
  (``[A-Za-z_][A-Za-z0-9_]*``, not a C++ keyword, at most 200 characters), else
  :class:`~byocc.backends.codegen.CodegenError` (an offloaded function's global symbol never
  gets here as itself: it is exported under :func:`~byocc.transform.c_symbols.export_symbols`'
  name);
* :func:`c_string` - a string literal with every byte outside printable ASCII, quotes,
  backslashes and ``?`` (trigraphs) escaped;
* :func:`c_comment` - text for a ``//`` comment: one line, control characters and
  backslashes (line splices) replaced, never ending a comment early.
"""

from __future__ import annotations

from byocc.backends.codegen import CodegenError
from byocc.transform.c_symbols import CXX_KEYWORDS
from byocc.transform.c_symbols import MAX_IDENTIFIER
from byocc.transform.c_symbols import is_c_identifier


def c_identifier(name: str, what: str = "symbol") -> str:
    """``name`` itself when it is a safe C identifier; otherwise a CodegenError."""
    if not is_c_identifier(name):
        shown = name if isinstance(name, str) else repr(name)
        raise CodegenError(
            f"{what} {c_string(shown)} is not a valid C identifier "
            f"([A-Za-z_][A-Za-z0-9_]*, at most {MAX_IDENTIFIER} characters, not a C++ keyword); "
            "rename it in the model")
    return name


def c_string(text: str) -> str:
    """A C/C++ string literal for ``text`` (UTF-8 bytes, escaped)."""
    out = ['"']
    for byte in str(text).encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    out.append('"')
    return "".join(out)


def c_comment(text: str) -> str:
    """``text`` made safe inside a ``//`` comment: printable ASCII on one line (others as
    ``\\xNN``-like escapes without a backslash), no line splice."""
    out = []
    for ch in str(text):
        code = ord(ch)
        if ch == "\\":
            out.append("(bs)")
        elif 0x20 <= code < 0x7F:
            out.append(ch)
        else:
            out.append(f"<U+{code:04X}>")
    return "".join(out)


__all__ = ["CXX_KEYWORDS", "MAX_IDENTIFIER", "c_comment", "c_identifier", "c_string", "is_c_identifier"]
