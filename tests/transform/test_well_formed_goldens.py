"""well_formed on every text of the partitioning goldens: all are well formed except E34's
FuseOpsByPattern output, which TVM itself produces ill formed (spec section 9)."""

from __future__ import annotations

import pytest
from test_merge_goldens import EXAMPLES
from test_merge_goldens import constants

from byocc.ir.well_formed import check_well_formed
from byocc.ir.well_formed import well_formed
from byocc.text import parse_module

TEXTS = [(d.name, f.name) for d in sorted(EXAMPLES.iterdir()) if d.is_dir()
         for f in sorted(d.glob("*.txt")) if f.name != "notes.txt"
         and not f.read_text().startswith("ERROR")]


@pytest.mark.parametrize("case,fname", TEXTS)
def test_golden_text_well_formedness(case, fname):
    mod = parse_module((EXAMPLES / case / fname).read_text(), source=fname, constants=constants(case))
    problems = well_formed(mod)
    if (case, fname) == ("34_long_cycle_ill_formed", "p2_fuse.txt"):
        # b = R.nn.relu(a) uses the matmul result before the fused call defines it
        assert [p.message for p in problems] == ["Var a is not defined."]
        assert (problems[0].span.source, problems[0].span.line) == ("p2_fuse.txt", 20)
        assert check_well_formed(mod) is False
    else:
        assert problems == []
