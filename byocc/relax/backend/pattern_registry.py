"""``relax.backend.pattern_registry``: TVM's registry functions (:mod:`byocc.backends`).

``get_patterns_with_prefix(prefix)`` returns the entries whose name starts with
``prefix``, last registered first (FuseOpsByPattern's priority order).
"""

from __future__ import annotations

from byocc.backends import FusionPattern
from byocc.backends import get_pattern
from byocc.backends import get_patterns_with_prefix
from byocc.backends import register_patterns
from byocc.backends import remove_patterns

__all__ = ["FusionPattern", "get_pattern", "get_patterns_with_prefix", "register_patterns", "remove_patterns"]
