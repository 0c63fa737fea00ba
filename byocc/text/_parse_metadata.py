"""``metadata["KEY"][i]`` references and the sidecar ``.npz`` that holds their values.

TVM 0.27 prints values without a literal form as metadata references and cannot print the
values themselves (spec/textual-ir.md sections 1.6, 7.3). byocc keeps tensor values in a
sidecar ``<stem>.npz`` whose keys are ``"<metadata key>/<i>"`` (``ir.GenericConst/0``).

One ``(key, i)`` always maps to one object, so a constant referenced twice is one
:class:`~byocc.ir.Constant` and prints back with one index.

A constant's type: from its sidecar array when there is one; otherwise from the annotation
of the binding whose whole right-hand side it is (``c: R.Tensor((4,), "float32") =
metadata[...]``); otherwise unknown (``R.Tensor``): operators then infer what they can and
the binding's own annotation gives the result type.
"""

from __future__ import annotations

from byocc.ir import Constant, ParseError, Span, StructInfo, TensorStructInfo

TENSOR_KEYS = ("ir.GenericConst", "relax.expr.Constant", "ffi.Tensor")
OTHER_KEYS = ("ffi.Module", "ffi.String")


class RuntimeModuleRef:
    """A ``metadata["ffi.Module"][i]`` placeholder (a compiled module the text cannot hold).

    The printer prints any object with ``is_runtime_module`` as an ``ffi.Module`` reference."""

    is_runtime_module = True
    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def __repr__(self) -> str:
        return f'metadata["ffi.Module"][{self.index}]'


class MetadataTable:
    """Resolves metadata references of one parse, sharing one object per ``(key, index)``."""

    def __init__(self, constants: dict | None):
        self.constants = constants or {}
        self.objects: dict[tuple[str, int], object] = {}

    def lookup(self, key: str, index: int, span: Span | None, hint: StructInfo | None = None):
        obj = self.objects.get((key, index))
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

    def _value(self, key: str, index: int):
        for k in (key, "ir.GenericConst" if key == "relax.expr.Constant" else "relax.expr.Constant"):
            v = self.constants.get(f"{k}/{index}")
            if v is not None:
                return v
        return None

    def _constant(self, key: str, index: int, span: Span | None, hint) -> Constant:
        data = self._value(key, index)
        if data is None:
            sinfo = hint if isinstance(hint, TensorStructInfo) else TensorStructInfo()
            return Constant(None, sinfo, span, index)
        import numpy as np

        try:
            arr = np.asarray(data)
        except Exception as exc:  # noqa: BLE001  (any array-like failure is bad input)
            raise ParseError(f"constant {key}/{index} in the sidecar is not an array: {exc}", span) from None
        return Constant(arr, TensorStructInfo(tuple(int(d) for d in arr.shape), arr.dtype.name), span, index)

    def _string(self, key: str, index: int) -> str:
        data = self._value(key, index)
        if isinstance(data, str):
            return data
        if data is not None and getattr(data, "ndim", None) == 0:
            return str(data.item())
        # unknown text: a placeholder that still prints as metadata (it holds a newline)
        return f"<ffi.String {index}>\n"


def load_sidecar(path) -> dict | None:
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
