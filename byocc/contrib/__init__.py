"""``tvm.contrib``: the backend helpers TVM users import from there (``contrib.cutlass``)."""

from __future__ import annotations

__all__ = ["cutlass"]
