"""``tvm.relax.testing``: small workload builders that tests and benchmarks share.

``get_relax_matmul_module`` (a matmul and its epilogue), ``get_relax_attention_module``
(one ``R.nn.attention``) and ``get_relax_stacked_attention_module`` (attention over a
stacked QKV tensor, split or strided-sliced). Each returns an IRModule holding ``main``,
built with :mod:`byocc.script.ir_builder`.
"""

from __future__ import annotations

from .attention import get_relax_attention_module
from .attention import get_relax_stacked_attention_module
from .matmul import get_relax_matmul_module

__all__ = ["get_relax_attention_module", "get_relax_matmul_module", "get_relax_stacked_attention_module"]
