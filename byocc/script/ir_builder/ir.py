"""``tvm.script.ir_builder.ir``: ``ir_module()``, a frame collecting functions into a module.

::

    with IRBuilder() as builder:
        with ir_builder.ir.ir_module():
            with relax_builder.function():
                R.func_name("main")
                ...
    mod = builder.get()  # an IRModule holding "main"
"""

from __future__ import annotations

from typing import Any

from byocc.ir import InputError
from byocc.ir import IRModule

from .base import IRBuilderFrame


class IRModuleFrame(IRBuilderFrame):
    """Collects the functions built in it (each named with ``R.func_name``)."""

    def __init__(self) -> None:
        super().__init__()
        self.functions: dict[str, Any] = {}
        self.attrs: dict[str, Any] = {}

    def add_child_result(self, child: IRBuilderFrame, result: Any) -> None:
        name = getattr(child, "name", None)
        if name is None:
            raise InputError("a function in an ir_module() frame needs a name: call R.func_name(...)")
        if name in self.functions:
            raise InputError(f"the module already has a function named '{name}'")
        self.functions[name] = result

    def finish(self) -> IRModule:
        return IRModule(self.functions, attrs=self.attrs or None)


def ir_module() -> IRModuleFrame:
    """A frame building one IRModule."""
    return IRModuleFrame()


def module_attrs(attrs: dict) -> None:
    """Set attributes of the module being built."""
    from .base import IRBuilder

    frame = IRBuilder.current().find_frame(IRModuleFrame)
    if frame is None:
        raise InputError("module_attrs must be called inside an ir_module() frame")
    if not isinstance(attrs, dict):
        raise InputError(f"module_attrs: expected a dict, got {type(attrs).__name__}")
    frame.attrs.update(attrs)


__all__ = ["IRModuleFrame", "ir_module", "module_attrs"]
