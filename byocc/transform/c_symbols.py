"""The C symbol a generated library exports for an offloaded function (docs/codegen.md#c-abi).

The Relax name (``global_symbol``) stays exactly what the partitioner built, however long
(byocc's merge names a function after every op it fused: a merged ResNet-50 gets thousands
of characters). The C symbol is that name itself when it is a usable C identifier
(:func:`is_c_identifier`), otherwise a short, stable form (:func:`short_symbol`): the
name's first identifier-safe characters, then ``_`` and a hash of the whole name.
:func:`export_symbols` gives every function of one module its symbol: a usable name keeps
itself, a short form that is taken by another function gets ``_2``, ``_3``, ... in sorted
order of the full names, so the result does not depend on the order the names come in.

RunCodegen names the ``R.call_dps_packed`` callee and the codegen's function by this symbol;
the manifest records both (``symbol``, ``global_symbol``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_UNSAFE = re.compile(r"[^A-Za-z0-9_]+")

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

#: Longest name exported as itself.
MAX_IDENTIFIER = 200
#: Characters of the name kept in front of the hash of a short form.
PREFIX_CHARS = 60
#: Hex digits of the SHA-256 of the full name in a short form.
HASH_CHARS = 16


def is_c_identifier(name: object) -> bool:
    """``[A-Za-z_][A-Za-z0-9_]*``, at most :data:`MAX_IDENTIFIER` characters, no C++ keyword
    (nor ``main``), no reserved ``__`` prefix."""
    return (isinstance(name, str) and bool(_IDENT.match(name)) and name not in CXX_KEYWORDS
            and len(name) <= MAX_IDENTIFIER and not name.startswith("__"))


def short_symbol(name: str) -> str:
    """``<prefix>_<hash>``: the first :data:`PREFIX_CHARS` identifier-safe characters of
    ``name`` (runs of other characters become one ``_``; ``f_`` in front when it would start
    with a digit or be empty) and :data:`HASH_CHARS` hex digits of SHA-256 of ``name``."""
    prefix = _UNSAFE.sub("_", name).strip("_")
    if not prefix or prefix[0].isdigit():
        prefix = "f_" + prefix
    prefix = prefix[:PREFIX_CHARS].rstrip("_")
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]
    return f"{prefix}_{digest}"


def export_symbols(names: Iterable[str]) -> dict[str, str]:
    """The C symbol of every name, all distinct: a usable name is its own symbol; the others
    get :func:`short_symbol`, with ``_2``, ``_3``, ... appended (in sorted order of the names)
    while it is taken."""
    unique = sorted(set(names))
    out = {n: n for n in unique if is_c_identifier(n)}
    taken = set(out)
    for name in unique:
        if name in out:
            continue
        base = candidate = short_symbol(name)
        k = 1
        while candidate in taken:
            k += 1
            candidate = f"{base}_{k}"
        out[name] = candidate
        taken.add(candidate)
    return out


__all__ = ["CXX_KEYWORDS", "HASH_CHARS", "MAX_IDENTIFIER", "PREFIX_CHARS", "export_symbols", "is_c_identifier",
           "short_symbol"]
