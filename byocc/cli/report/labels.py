"""The text a node shows: short struct info, names shortened to fit (the whole name is in
the node's title and the details panel), a region's composites in a few lines."""

from __future__ import annotations

from collections import Counter

from byocc.ir import PrimStructInfo
from byocc.ir import ShapeStructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import TupleStructInfo

#: The longest line a node shows; longer names are shortened (shown whole on demand).
MAX_CHARS = 34


def sinfo_text(sinfo) -> str:
    """Short struct info: ``16×64 float16``, ``(16×16, 16×64) float16``, ``shape(4)``."""
    if isinstance(sinfo, TensorStructInfo):
        if sinfo.shape is not None:
            dims = "×".join(str(d) for d in sinfo.shape) or "scalar"
        else:
            dims = f"{sinfo.ndim}-d" if sinfo.ndim >= 0 else "?-d"
        return f"{dims} {sinfo.dtype or '?'}"
    if isinstance(sinfo, TupleStructInfo):
        fields = [sinfo_text(f) for f in sinfo.fields]
        dtypes = {f.rsplit(" ", 1)[-1] for f in fields if " " in f}
        if len(dtypes) == 1 and all(" " in f for f in fields):
            return "(" + ", ".join(f.rsplit(" ", 1)[0] for f in fields) + ") " + dtypes.pop()
        return "(" + ", ".join(fields) + ")"
    if isinstance(sinfo, ShapeStructInfo):
        return "shape" if sinfo.ndim < 0 else f"shape({sinfo.ndim})"
    if isinstance(sinfo, PrimStructInfo):
        return f"{getattr(sinfo, 'dtype', None) or 'prim'} value"
    return "object" if sinfo is not None else ""


def shorten(name: str, limit: int = MAX_CHARS) -> str:
    """``name`` when it fits in ``limit`` characters, else its head, an ellipsis and its tail
    (the backend suffix of a fused name stays readable)."""
    if len(name) <= limit:
        return name
    tail = max(8, limit // 3)
    return name[: limit - tail - 1] + "…" + name[-tail:]


def fit(text: str) -> str:
    return shorten(text, MAX_CHARS)


def head(name: str, rest: str) -> str:
    """``name = rest`` in :data:`MAX_CHARS`, shortening the name first (the operator stays)."""
    room = MAX_CHARS - len(rest) - 3
    return fit(f"{shorten(name, max(room, 8))} = {rest}")


def composite_lines(composites: list[str], backend: str, lines: int = 3) -> tuple[str, ...]:
    """The composites of a region as at most ``lines`` lines: ``layer_norm · matmul ×3``
    (the backend's prefix dropped, repeats counted, first appearance first)."""
    counts = Counter(composites)
    prefix = backend + "."
    items = [(c.removeprefix(prefix) + (f" ×{counts[c]}" if counts[c] > 1 else "")) for c in dict.fromkeys(composites)]
    out: list[str] = []
    current = ""
    for i, item in enumerate(items):
        piece = item if not current else current + " · " + item
        if len(piece) <= MAX_CHARS:
            current = piece
            continue
        if current:
            out.append(current)
        current = fit(item)
        if len(out) == lines - 1 and i < len(items):
            rest = len(items) - i
            out.append(fit(current + (f" +{rest - 1} more" if rest > 1 else "")))
            return tuple(out)
    if current:
        out.append(current)
    return tuple(out) or ("no composite",)


__all__ = ["MAX_CHARS", "composite_lines", "fit", "head", "shorten", "sinfo_text"]
