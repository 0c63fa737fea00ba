"""``tvm.ir.base``'s comparison helpers: :func:`assert_structural_equal` and friends.

:func:`structural_equal` itself lives in :mod:`byocc.ir.structural`; this module adds the
asserting form TVM's tests use, whose failure names the first line where the two values'
printed forms differ.
"""

from __future__ import annotations

from typing import Any

from .diagnostics import ByoccError
from .structural import structural_equal
from .structural import structural_hash


class StructuralEqualError(ByoccError, ValueError):
    """Raised by :func:`assert_structural_equal` (TVM raises ``ValueError``)."""


def _text(node: Any) -> str:
    script = getattr(node, "script", None)
    if callable(script):
        try:
            return str(script())
        except Exception:  # noqa: BLE001 - a value the printer cannot print: fall back to repr
            pass
    return repr(node)


def assert_structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> None:
    """Raise :class:`StructuralEqualError` (a ``ValueError``) unless ``lhs`` and ``rhs`` are
    structurally equal; the message holds a diff of their printed forms."""
    if structural_equal(lhs, rhs, map_free_vars):
        return
    import difflib  # only for a failure's message: kept off the start-up path

    left, right = _text(lhs).splitlines(), _text(rhs).splitlines()
    diff = list(difflib.unified_diff(left, right, "lhs", "rhs", lineterm="", n=2))
    detail = "\n".join(diff) if diff else "(the printed forms are the same; the difference is in " \
        "variable identity, struct info or constant values the printer does not show)"
    raise StructuralEqualError(f"StructuralEqual check failed:\n{detail}")


__all__ = ["StructuralEqualError", "assert_structural_equal", "structural_equal", "structural_hash"]
