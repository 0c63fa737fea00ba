"""``tvm.script.ir_builder``: build IR statement by statement (TVM's IRBuilder).

``IRBuilder`` (:mod:`.base`) holds the frames; ``relax`` (:mod:`.relax`) has the Relax
function and dataflow frames and the statements (``arg``, ``emit``, ``output``...);
``ir`` (:mod:`.ir`) the module frame. The submodules load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from .base import IRBuilder
from .base import IRBuilderFrame

__all__ = ["IRBuilder", "IRBuilderFrame", "ir", "relax"]


def __getattr__(name: str) -> Any:
    if name in ("ir", "relax"):
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
