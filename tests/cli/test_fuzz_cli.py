"""1 000 randomly mutated inputs through `byocc check`: each must end with exit code 1 and one
located message (`file:line:col: error: ...`), never a traceback, a hang or exit 0.

Every mutation is chosen so that the result is certainly wrong (a cut inside the last
function, a deleted binding whose variable is used later, an unbalanced or junk token in a
statement, an invalid dtype, an undefined variable, an unknown operator), so exit 0 would
mean byocc accepted nonsense.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from byocc.cli import cli

DATA = Path(__file__).parents[1] / "data" / "conformance"
SOURCES = sorted(DATA.glob("*/input.relax")) + sorted((Path(__file__).parents[2] / "samples").glob("*.relax"))
N_MUTANTS = 1000
LOCATED = re.compile(r"^mutant\.relax:\d+:\d+: error: ", re.M)
BINDING = re.compile(r"^(\s+)([A-Za-z_][A-Za-z0-9_]*)(: .*)? = (.*)$")
CALL_ARG = re.compile(r"\(([a-z_][a-z0-9_]*)[,)]")
OP_CALL = re.compile(r"R\.(?:nn\.)?[a-z_]+\(")


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _body_range(lines: list[str]) -> tuple[int, int]:
    """Line indices (start, end) strictly inside the last function: after its `def`, up to
    and including its final `return`."""
    last_def = max(i for i, line in enumerate(lines) if line.lstrip().startswith("def "))
    last_ret = max(i for i, line in enumerate(lines) if line.lstrip().startswith("return "))
    return last_def + 1, last_ret


def truncate(text: str, rng: random.Random) -> str | None:
    lines = _lines(text)
    start, end = _body_range(lines)
    offset = sum(len(line) + 1 for line in lines[:start])
    stop = sum(len(line) + 1 for line in lines[:end]) + len("        return")
    return text[: rng.randrange(offset, stop)]


def delete_used_binding(text: str, rng: random.Random) -> str | None:
    lines = _lines(text)
    candidates = []
    for i, line in enumerate(lines):
        m = BINDING.match(line)
        if m and not line.lstrip().startswith(("#", "R.func_attr")):
            name = m.group(2)
            if name in ("cls",):
                continue
            later = "\n".join(lines[i + 1:])
            if re.search(rf"\b{re.escape(name)}\b", later):
                candidates.append(i)
    if not candidates:
        return None
    i = rng.choice(candidates)
    return "\n".join(lines[:i] + lines[i + 1:]) + "\n"


JUNK = [")", "(", "@", "$", "?", ",,", "]]", "}", ":=", "=="]


def junk_token(text: str, rng: random.Random) -> str | None:
    lines = _lines(text)
    candidates = [i for i, line in enumerate(lines) if BINDING.match(line) and " = R." in line]
    if not candidates:
        return None
    i = rng.choice(candidates)
    line = lines[i]
    eq = line.index(" = ") + 3
    pos = rng.randrange(eq, len(line))
    lines[i] = line[:pos] + rng.choice(JUNK) + line[pos:]
    return "\n".join(lines) + "\n"


def bad_dtype(text: str, rng: random.Random) -> str | None:
    spots = [m.start(1) for m in re.finditer(r'dtype="([a-z0-9]+)"', text)]
    if not spots:
        return None
    pos = rng.choice(spots)
    end = text.index('"', pos)
    return text[:pos] + rng.choice(["float33", "flaot32", "int7", "complex", "tensor"]) + text[end:]


def undefined_variable(text: str, rng: random.Random) -> str | None:
    lines = _lines(text)
    candidates = [(i, m) for i, line in enumerate(lines) if BINDING.match(line)
                  for m in CALL_ARG.finditer(line) if line.index(" = ") < m.start()]
    if not candidates:
        return None
    i, m = rng.choice(candidates)
    line = lines[i]
    lines[i] = line[: m.start(1)] + "no_such_var" + line[m.end(1):]
    return "\n".join(lines) + "\n"


def unknown_op(text: str, rng: random.Random) -> str | None:
    spots = list(OP_CALL.finditer(text))
    if not spots:
        return None
    m = rng.choice(spots)
    return text[: m.end() - 1] + rng.choice(["_x", "zz", "_unknown"]) + text[m.end() - 1:]


MUTATORS = [truncate, delete_used_binding, junk_token, bad_dtype, undefined_variable, unknown_op]


def mutants():
    rng = random.Random(20261130)
    texts = [p.read_text() for p in SOURCES]
    out = []
    while len(out) < N_MUTANTS:
        source = rng.randrange(len(texts))
        mutator = MUTATORS[len(out) % len(MUTATORS)]
        mutant = mutator(texts[source], rng)
        if mutant is not None and mutant != texts[source]:
            out.append((f"{mutator.__name__}:{SOURCES[source].parent.name}:{len(out)}", mutant))
    return out


@pytest.mark.skipif(not SOURCES, reason="no sample inputs")
def test_mutated_inputs_fail_cleanly(tmp_path):
    runner = CliRunner()
    path = tmp_path / "mutant.relax"
    problems = []
    for label, text in mutants():
        path.write_text(text)
        cwd = os.getcwd()
        os.chdir(tmp_path)
        try:
            result = runner.invoke(cli, ["check", "mutant.relax"], catch_exceptions=True)
        finally:
            os.chdir(cwd)
        stderr = result.stderr
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            problems.append(f"{label}: raised {type(result.exception).__name__}: {result.exception}")
        elif result.exit_code != 1:
            problems.append(f"{label}: exit {result.exit_code}\n{text[-300:]}")
        elif "Traceback" in stderr or not LOCATED.search(stderr):
            problems.append(f"{label}: message not located: {stderr[:300]!r}")
    assert not problems, f"{len(problems)} of {N_MUTANTS} mutants mishandled:\n" + "\n".join(problems[:10])
