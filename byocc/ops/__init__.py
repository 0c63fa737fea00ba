"""byocc.ops: the Relax operator registry.

One :class:`OpDef` per operator (``relax.add``, ``relax.nn.conv2d``...): Python call
signature, attribute schema in print order with defaults, TVM's constructor normalisations
and struct-info inference. Families live in their own modules, as in TVM.
"""

from . import binary  # noqa: F401  (registration side effects)
from . import builtin  # noqa: F401  (registration side effects)
from . import conv  # noqa: F401  (registration side effects)
from . import create  # noqa: F401  (registration side effects)
from . import image  # noqa: F401  (registration side effects)
from . import index  # noqa: F401  (registration side effects)
from . import linear_algebra  # noqa: F401  (registration side effects)
from . import manipulate  # noqa: F401  (registration side effects)
from . import nn  # noqa: F401  (registration side effects)
from . import qdq  # noqa: F401  (registration side effects)
from . import reduce  # noqa: F401  (registration side effects)
from . import search  # noqa: F401  (registration side effects)
from . import unary  # noqa: F401  (registration side effects)
from .evaluate import bound_reference
from .evaluate import constant_of
from .evaluate import constant_operands
from .evaluate import evaluate_call
from .evaluate import fold_call
from .evaluate import reference_of
from .registry import REQUIRED
from .registry import AttrField
from .registry import OpDef
from .registry import all_op_defs
from .registry import get_op_def
from .registry import infer_struct_info
from .registry import lookup_printed
from .registry import make_call

__all__ = [
    "AttrField", "OpDef", "REQUIRED", "all_op_defs", "bound_reference", "constant_of",
    "constant_operands", "evaluate_call", "fold_call", "get_op_def", "infer_struct_info",
    "lookup_printed", "make_call", "reference_of",
]
