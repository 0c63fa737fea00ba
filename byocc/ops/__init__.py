"""byocc.ops: the Relax operator registry.

One :class:`OpDef` per operator (``relax.add``, ``relax.nn.conv2d``...): Python call
signature, attribute schema in print order with defaults, TVM's constructor normalisations
and struct-info inference. Families live in their own modules, as in TVM.
"""

from . import (  # noqa: F401  (registration side effects)
    binary,
    builtin,
    conv,
    create,
    image,
    index,
    linear_algebra,
    manipulate,
    nn,
    qdq,
    reduce,
    search,
    unary,
)
from .evaluate import (
    bound_reference,
    constant_of,
    constant_operands,
    evaluate_call,
    fold_call,
    reference_of,
)
from .registry import (
    REQUIRED,
    AttrField,
    OpDef,
    all_op_defs,
    get_op_def,
    infer_struct_info,
    lookup_printed,
    make_call,
)

__all__ = [
    "AttrField", "OpDef", "REQUIRED", "all_op_defs", "bound_reference", "constant_of",
    "constant_operands", "evaluate_call", "fold_call", "get_op_def", "infer_struct_info",
    "lookup_printed", "make_call", "reference_of",
]
