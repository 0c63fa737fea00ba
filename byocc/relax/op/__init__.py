"""``relax.op``: one constructor per operator of byocc's registry, TVM's names and signatures.

``relax.op.add(x, y)``, ``relax.op.matmul(x, w, out_dtype=None)``; families live in
submodules as in TVM: ``relax.op.nn.conv2d``, ``relax.op.image.resize2d``,
``relax.op.builtin.alloc_tensor``. Each returns a typed :class:`~byocc.ir.Call`
(see :mod:`byocc.relax.op._generate`).
"""

from __future__ import annotations

from . import builtin
from . import image
from . import nn
from ._generate import namespace_entries

_ENTRIES = namespace_entries("relax.")
globals().update(_ENTRIES)

__all__ = sorted(_ENTRIES) + ["builtin", "image", "nn"]  # noqa: PLE0605  (generated from the registry)
