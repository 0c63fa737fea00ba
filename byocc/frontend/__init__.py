"""byocc.frontend: importers from other model formats (ONNX) to Relax modules.

``from_onnx(model_or_path, params_as_inputs=False)`` returns an IRModule with one function
``main``; onnx and numpy are imported only when a model is imported.
"""

from __future__ import annotations


def from_onnx(model, *, params_as_inputs: bool = False):
    """Import an ONNX model (a ``ModelProto`` or a path); see :mod:`byocc.frontend.onnx`."""
    from .onnx import from_onnx as _from_onnx

    return _from_onnx(model, params_as_inputs=params_as_inputs)


def supported_onnx_ops() -> list[str]:
    """The ONNX operator types byocc converts (a node on constants folds through its
    converter, by byocc's own references, so it needs one too)."""
    from .onnx_ops import supported_op_types

    return supported_op_types()


__all__ = ["from_onnx", "supported_onnx_ops"]
