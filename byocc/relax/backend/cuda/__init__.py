"""``relax.backend.cuda``: the CUDA backends' partition drivers (``cutlass``, ``cublas``)."""

from __future__ import annotations

__all__ = ["cublas", "cutlass"]


def __getattr__(name: str):
    if name in __all__:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
