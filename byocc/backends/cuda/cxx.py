"""Safe C++ text from model-derived names (docs/codegen.md#c-abi; issue: a crafted model
must not inject code into the sources a user compiles).

Every name that comes from the model reaches C++ only through one of these:

* :func:`c_identifier` - a global symbol or other name used as an identifier: validated
  (``[A-Za-z_][A-Za-z0-9_]*``, not a C++ keyword, at most 200 characters), else
  :class:`~byocc.backends.codegen.CodegenError`;
* :func:`c_string` - a string literal with every byte outside printable ASCII, quotes,
  backslashes and ``?`` (trigraphs) escaped;
* :func:`c_comment` - text for a ``//`` comment: one line, control characters and
  backslashes (line splices) replaced, never ending a comment early.
"""

from __future__ import annotations

import re

from byocc.backends.codegen import CodegenError

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

CXX_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq
nullptr operator or or_eq private protected public register reinterpret_cast requires return
short signed sizeof static static_assert static_cast struct switch template this thread_local
throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while
xor xor_eq main
""".split())

MAX_IDENTIFIER = 200


def is_c_identifier(name: str) -> bool:
    return (isinstance(name, str) and bool(_IDENT.match(name)) and name not in CXX_KEYWORDS
            and len(name) <= MAX_IDENTIFIER and not name.startswith("__"))


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


__all__ = ["CXX_KEYWORDS", "c_comment", "c_identifier", "c_string", "is_c_identifier"]
