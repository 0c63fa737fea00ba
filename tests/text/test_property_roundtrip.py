"""Property: a module printed, parsed and printed again gives the first text (a fixpoint), and
the parsed module is structurally equal to the original, function by function.

Modules come from ``randgraph``: several public and private functions, dataflow and plain
blocks, tuple outputs, symbolic leading dims, local functions, calls between members, scalar
constants, awkward name hints. ``BYOCC_PROPERTY_EXAMPLES`` scales the example counts up.
"""

from __future__ import annotations

import os
import re

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import note
from hypothesis import settings
from randgraph import RandomChooser
from randgraph import print_with_constants
from randgraph import random_module
from randgraph import random_partition_module
from randgraph import strategy

from byocc.ir import structural_equal
from byocc.ir.well_formed import well_formed
from byocc.text import parse_module
from byocc.text import print_module

EXAMPLES = int(os.environ.get("BYOCC_PROPERTY_EXAMPLES", "0") or 0)
SETTINGS = {"deadline": None, "derandomize": True, "database": None,
            "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.large_base_example]}


def check_roundtrip(mod, constants: dict | None = None) -> None:
    assert well_formed(mod) == [], "the generator built an ill-formed module"
    if constants is None:
        text = print_module(mod)
    else:
        text, constants = print_with_constants(mod)
    note(text)
    parsed = parse_module(text, constants=constants)
    again = print_module(parsed)
    assert again == text, "print -> parse -> print is not a fixpoint"
    assert sorted(parsed.names()) == sorted(mod.names())
    for name in mod.names():
        assert structural_equal(parsed[name], mod[name]), f"function {name} changed through the text"
    assert well_formed(parsed) == []


@settings(max_examples=max(EXAMPLES, 300), **SETTINGS)
@given(strategy(random_module))
def test_random_modules_print_parse_print_to_a_fixpoint(mod):
    check_roundtrip(mod)


@settings(max_examples=max(EXAMPLES // 2, 100), **SETTINGS)
@given(strategy(random_partition_module))
def test_partitionable_graphs_with_tensor_constants_round_trip(mod):
    """Tensor constants print as ``metadata[...]`` and come back from the sidecar arrays."""
    check_roundtrip(mod, constants={})


FEATURES = {
    "a local function": r"\n        def \w+\(",
    "a symbolic dim": r"TypeVar\(",
    "a private function": r"private=True",
    "a call between members": r"cls\.\w+\(",
    "a tuple result": r"-> R\.Tuple\(",
    "a dataflow block": r"R\.dataflow\(\)",
    "a plain block after a dataflow block": r"R\.output\(.*\)\n        \w+: ",
    "a scalar constant": r"R\.const\(",
    "split and tuple-get-item": r"R\.split\(.*\n.*= \w+\[\d\]",
    "a renamed awkward hint": r"\b(R_1|cls_1|T_1|I_1|Module_1|caf__)\b",
}


def test_the_generator_covers_what_the_property_is_about():
    """Over 150 seeds every feature the round trip must survive shows up at least 5 times."""
    seen = dict.fromkeys(FEATURES, 0)
    for seed in range(150):
        text = print_module(random_module(RandomChooser(seed)))
        for name, pattern in FEATURES.items():
            seen[name] += bool(re.search(pattern, text))
    assert all(n >= 5 for n in seen.values()), seen
