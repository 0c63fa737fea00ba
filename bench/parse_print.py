"""Parse and print cost per binding on transformer-like modules (1 000 to 100 000 bindings).

    python bench/parse_print.py [--sizes 1000,10000,100000]

Prints microseconds per binding for parse and print at each size, and the growth exponent
of total time against size (1.0 = linear; the target is <= 1.1). The 100 000-binding run
also shows that neither step hits Python's recursion limit.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _timing import best_of  # noqa: E402
from _timing import growth_exponent  # noqa: E402
from genmodel import make_module_text  # noqa: E402

from byocc.text import parse_module  # noqa: E402
from byocc.text import print_module  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,3000,10000,30000,100000")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    parse_t, print_t = [], []
    print(f"{'bindings':>9} {'parse us/b':>11} {'print us/b':>11} {'round trip':>10}")
    for n in sizes:
        text = make_module_text(n)
        holder = {}

        def do_parse():
            holder["mod"] = parse_module(text, "<bench>")

        tp = best_of(do_parse, args.repeat)
        mod = holder["mod"]

        def do_print():
            holder["out"] = print_module(mod)

        tq = best_of(do_print, args.repeat)
        same = holder["out"].rstrip("\n") == text.rstrip("\n")
        parse_t.append(tp)
        print_t.append(tq)
        print(f"{n:>9} {tp / n * 1e6:>11.1f} {tq / n * 1e6:>11.1f} {'ok' if same else 'DIFFERS':>10}")
    if len(sizes) > 1:
        print(f"growth exponent: parse {growth_exponent(sizes, parse_t):.2f}, print {growth_exponent(sizes, print_t):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
