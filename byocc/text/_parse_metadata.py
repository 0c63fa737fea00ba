"""``metadata["KEY"][i]`` references and the sidecar ``.npz`` that holds their values.

TVM 0.27 prints values without a literal form as metadata references and cannot print the
values themselves (docs/textual-ir.md#metadata, #meaning-of-the-text). byocc keeps tensor values in a
sidecar ``<stem>.npz`` whose keys are ``"<metadata key>/<i>"`` (``ir.GenericConst/0``).

One ``(key, i)`` always maps to one object, so a constant referenced twice is one
:class:`~byocc.ir.Constant` and prints back with one index.

A constant's type: from its sidecar array when there is one; otherwise from the annotation
of the binding whose whole right-hand side it is (``c: R.Tensor((4,), "float32") =
metadata[...]``); otherwise unknown (``R.Tensor``): operators then infer what they can and
the binding's own annotation gives the result type.
"""

from __future__ import annotations

from os import PathLike
from typing import Any

from byocc.ir import Constant
from byocc.ir import ParseError
from byocc.ir import Span
from byocc.ir import StructInfo
from byocc.ir import TensorStructInfo

TENSOR_KEYS = ("ir.GenericConst", "relax.expr.Constant", "ffi.Tensor")
OTHER_KEYS = ("ffi.Module", "ffi.String")


class RuntimeModuleRef:
    """A ``metadata["ffi.Module"][i]`` placeholder (a compiled module the text cannot hold).

    The printer prints any object with ``is_runtime_module`` as an ``ffi.Module`` reference."""

    is_runtime_module = True
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f'metadata["ffi.Module"][{self.index}]'


class MetadataTable:
    """Resolves metadata references of one parse, sharing one object per ``(key, index)``."""

    def __init__(self, constants: dict[str, Any] | None, sidecar: str | None = None) -> None:
        self.constants = constants or {}
        #: the sidecar's name when the values come from one: then every referenced tensor
        #: constant must have its array, of the annotated type, and no array may be unused
        self.sidecar = sidecar if constants is not None else None
        self.objects: dict[tuple[str, int], MetadataObject] = {}

    def lookup(self, key: str, index: int, span: Span | None, hint: StructInfo | None = None) -> MetadataObject:
        obj: MetadataObject | None = self.objects.get((key, index))
        if obj is not None:
            return obj
        if key in TENSOR_KEYS:
            obj = self._constant(key, index, span, hint)
        elif key == "ffi.Module":
            obj = RuntimeModuleRef(index)
        elif key == "ffi.String":
            obj = self._string(key, index)
        else:
            known = ", ".join(f'"{k}"' for k in TENSOR_KEYS + OTHER_KEYS)
            raise ParseError(f'unknown metadata key "{key}" (known: {known})', span)
        self.objects[(key, index)] = obj
        return obj

    def _value(self, key: str, index: int) -> Any:
        for k in (key, "ir.GenericConst" if key == "relax.expr.Constant" else "relax.expr.Constant"):
            v = self.constants.get(f"{k}/{index}")
            if v is not None:
                return v
        return None

    def _sidecar_key(self, key: str, index: int) -> str:
        for k in (key, "ir.GenericConst" if key == "relax.expr.Constant" else "relax.expr.Constant"):
            if f"{k}/{index}" in self.constants:
                return f"{k}/{index}"
        return f"{key}/{index}"

    def _constant(self, key: str, index: int, span: Span | None, hint: StructInfo | None) -> Constant:
        data = self._value(key, index)
        if data is None:
            if self.sidecar is not None:
                raise ParseError(f'the sidecar {self.sidecar} has no array "{key}/{index}" for this '
                                 "constant", span)
            sinfo = hint if isinstance(hint, TensorStructInfo) else TensorStructInfo()
            return Constant(None, sinfo, span, index)
        import numpy as np

        name = self._sidecar_key(key, index)
        try:
            arr = np.asarray(data)
        except Exception as exc:  # noqa: BLE001  (any array-like failure is bad input)
            raise ParseError(f'the array "{name}" in the sidecar is not an array: {exc}', span) from None
        sinfo = TensorStructInfo(tuple(int(d) for d in arr.shape), arr.dtype.name)
        if isinstance(hint, TensorStructInfo):
            bad = _mismatch(hint, sinfo)
            if bad:
                where = f" {self.sidecar}" if self.sidecar else ""
                raise ParseError(f'the array "{name}" in the sidecar{where} has {bad}', span)
        return Constant(arr, sinfo, span, index)

    def check_unused(self) -> None:
        """Every tensor array of the sidecar is referenced by the text (else ParseError)."""
        if self.sidecar is None:
            return
        used: set[str] = set()
        for key, index in self.objects:
            if key in TENSOR_KEYS:
                used.add(self._sidecar_key(key, index))
        extra = sorted((k for k in self.constants if k not in used and k.split("/", 1)[0] not in OTHER_KEYS),
                       key=_key_order)
        if extra:
            more = f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
            raise ParseError(f'the sidecar {self.sidecar} has an array "{extra[0]}"{more} that the '
                             "module does not use (is it the sidecar of another module?)")

    def _string(self, key: str, index: int) -> str:
        data = self._value(key, index)
        if isinstance(data, str):
            return data
        if data is not None and getattr(data, "ndim", None) == 0:
            return str(data.item())
        # unknown text: a placeholder that still prints as metadata (it holds a newline)
        return f"<ffi.String {index}>\n"


#: What a metadata reference stands for.
MetadataObject = Constant | RuntimeModuleRef | str


def _mismatch(annotated: TensorStructInfo, actual: TensorStructInfo) -> str:
    """What differs between an annotation and an array's type ("" if they agree)."""
    if annotated.dtype is not None and annotated.dtype != actual.dtype:
        return f"dtype {actual.dtype}, but the annotation says {annotated.dtype}"
    if annotated.shape is not None:
        from byocc.ir.prim import dim_text

        static = [d for d in annotated.shape if isinstance(d, int)]
        if len(annotated.shape) != len(actual.shape or ()) or (
                len(static) == len(annotated.shape) and tuple(static) != actual.shape):
            want = "(" + ", ".join(dim_text(d) for d in annotated.shape) + ")"
            return f"shape {tuple(actual.shape or ())}, but the annotation says {want}"
    elif annotated.ndim not in (-1, actual.ndim):
        return f"{actual.ndim} dimensions, but the annotation says {annotated.ndim}"
    return ""


def _key_order(key: str) -> tuple[str, int]:
    head, _, tail = key.rpartition("/")
    return (head, int(tail)) if tail.isdigit() else (key, -1)


def load_sidecar(path: str | PathLike[str]) -> dict[str, Any] | None:
    """The arrays of ``path`` (an ``.npz``), or None if there is no such file."""
    import os

    if not os.path.exists(path):
        return None
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except Exception as exc:  # noqa: BLE001  (a corrupt sidecar is bad input, whatever numpy raises)
        raise ParseError(f"cannot read the constants file {path}: {exc}") from None


__all__ = ["MetadataTable", "RuntimeModuleRef", "load_sidecar"]
