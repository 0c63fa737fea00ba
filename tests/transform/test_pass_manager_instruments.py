"""Pass manager: PassContext, Sequential, instrument hooks and the shipped instruments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from byocc.ir import Call
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Function
from byocc.ir import IRModule
from byocc.ir import MultipleErrors
from byocc.ir import Op
from byocc.ir import PassError
from byocc.ir import SeqExpr
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import WellFormedError
from byocc.ir import tensor
from byocc.transform import DeadCodeElimination
from byocc.transform import DumpIR
from byocc.transform import Pass
from byocc.transform import PassContext
from byocc.transform import PassInstrument
from byocc.transform import PassTimingInstrument
from byocc.transform import PrintAfterAll
from byocc.transform import PrintBeforeAll
from byocc.transform import Sequential
from byocc.transform import WellFormedInstrument
from byocc.transform import pass_instrument

T4 = tensor((4, 4), "float32")


def make_module() -> IRModule:
    x = Var("x", T4)
    a = Var("a", T4)
    dead = DataflowVar("dead", T4)
    relu = Call(Op.get("relax.nn.relu", create=True), (x,), None, (), T4)
    gelu = Call(Op.get("relax.nn.gelu", create=True), (a,), None, (), T4)
    main = Function((x,), SeqExpr((DataflowBlock((VarBinding(a, relu), VarBinding(dead, gelu))),), a),
                    T4, True, {"global_symbol": "main"})
    return IRModule({"main": main})


@dataclass(frozen=True)
class Identity(Pass):
    name: ClassVar[str] = "Identity"

    def run(self, mod):
        return mod


@dataclass(frozen=True)
class Failing(Pass):
    name: ClassVar[str] = "Failing"

    def run(self, mod):
        raise PassError("cannot do it")


@dataclass(frozen=True)
class Breaking(Pass):
    """Produces an ill-formed module (a use of an undefined variable)."""

    name: ClassVar[str] = "Breaking"

    def run(self, mod):
        x = Var("x", T4)
        ghost = Var("ghost", T4)
        r = Var("r", T4)
        exp = Call(Op.get("relax.exp", create=True), (ghost,), None, (), T4)
        f = Function((x,), SeqExpr((DataflowBlock((VarBinding(r, exp),)),), r), T4, True,
                     {"global_symbol": "main"})
        return IRModule({"main": f})


class Recorder(PassInstrument):
    def __init__(self, log, skip=()):
        self.log = log
        self.skip = skip

    def enter_pass_ctx(self):
        self.log.append("enter")

    def exit_pass_ctx(self):
        self.log.append("exit")

    def should_run(self, mod, info):
        self.log.append(f"should_run {info.name}")
        return info.name not in self.skip

    def run_before_pass(self, mod, info):
        self.log.append(f"before {info.name}")

    def run_after_pass(self, mod, info):
        self.log.append(f"after {info.name}")


def test_hooks_order_with_sequential():
    log: list[str] = []
    seq = Sequential([Identity(), DeadCodeElimination()], name="pipeline")
    with PassContext(instruments=[Recorder(log)]):
        out = seq(make_module())
    assert log == [
        "enter", "should_run pipeline", "before pipeline",
        "should_run Identity", "before Identity", "after Identity",
        "should_run DeadCodeElimination", "before DeadCodeElimination", "after DeadCodeElimination",
        "after pipeline", "exit",
    ]
    assert [b.var.name_hint for b in out["main"].body.blocks[0].bindings] == ["a"]


def test_should_run_false_skips_unless_required():
    log: list[str] = []
    mod = make_module()
    with PassContext(instruments=[Recorder(log, skip=("DeadCodeElimination",))]):
        out = DeadCodeElimination()(mod)
    assert out is mod
    assert "before DeadCodeElimination" not in log
    log.clear()
    with PassContext(instruments=[Recorder(log, skip=("DeadCodeElimination",))],
                     required_pass=["DeadCodeElimination"]):
        out = DeadCodeElimination()(mod)
    assert out is not mod
    assert "should_run DeadCodeElimination" not in log and "after DeadCodeElimination" in log


def test_opt_level_and_disabled_pass_in_sequential():
    mod = make_module()
    seq = Sequential([DeadCodeElimination()])  # DCE has opt_level 1
    with PassContext(opt_level=0):
        assert seq(mod) is mod
    with PassContext(opt_level=0, required_pass=["DeadCodeElimination"]):
        assert seq(mod) is not mod
    with PassContext(disabled_pass=["DeadCodeElimination"]):
        assert seq(mod) is mod
    assert seq(mod) is not mod  # the default context has opt_level 2


def test_failing_enter_exits_the_instruments_already_entered():
    log: list[str] = []

    class Broken(PassInstrument):
        def enter_pass_ctx(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        with PassContext(instruments=[Recorder(log), Broken()]):
            pass
    assert log == ["enter", "exit"]
    assert PassContext.current().instruments == ()


def test_errors_name_the_pass():
    with pytest.raises(PassError) as info:
        Sequential([Identity(), Failing()])(make_module())
    assert info.value.notes == ("while running pass Failing",)


def test_print_instruments_write_stderr_only(capsys):
    with PassContext(instruments=[PrintBeforeAll(), PrintAfterAll()]):
        DeadCodeElimination()(make_module())
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("Before Running Pass: DeadCodeElimination\n")
    assert "After Running Pass: DeadCodeElimination\n" in err
    assert "dead" in err.split("After Running Pass")[0]  # before: the dead binding is there
    assert "dead" not in err.split("After Running Pass")[1]


def test_dump_ir_writes_numbered_files(tmp_path):
    dump = tmp_path / "dump"
    with PassContext(instruments=[DumpIR(dump)]):
        Sequential([Identity(), DeadCodeElimination()], name="seq")(make_module())
    files = sorted(p.name for p in dump.iterdir())
    assert files == ["000_Identity.relax", "001_DeadCodeElimination.relax", "002_seq.relax"]
    text = (dump / "001_DeadCodeElimination.relax").read_text()
    assert text.startswith("# from tvm.script import ir as I\n") and "dead" not in text
    # refresh clears our own files, but never foreign ones
    DumpIR(dump, refresh=True)
    assert list(dump.iterdir()) == []
    (dump / "notes.txt").write_text("keep")
    DumpIR(dump, refresh=True)
    assert [p.name for p in dump.iterdir()] == ["notes.txt"]


def test_timing_instrument_records_nested_passes():
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        Sequential([Identity(), DeadCodeElimination()], name="seq")(make_module())
    names = [n for n, _ in timing.timings()]
    assert names == ["seq", "Identity", "DeadCodeElimination"]
    lines = timing.render().splitlines()
    assert lines[0].startswith("seq: ") and lines[1].startswith("  Identity: ")
    assert all(secs >= 0 for _, secs in timing.timings())


def test_well_formed_instrument_verifies_each_pass():
    with PassContext(instruments=[WellFormedInstrument()]):
        Identity()(make_module())  # fine
        with pytest.raises(WellFormedError) as info:
            Sequential([Breaking(), Identity()])(make_module())
    assert info.value.message == "Var ghost is not defined."
    assert "after pass Breaking" in info.value.notes
    assert isinstance(MultipleErrors([info.value]), PassError.__mro__[1])


def test_pass_instrument_decorator():
    calls = []

    @pass_instrument
    class OnlyAfter:
        def run_after_pass(self, mod, info):
            calls.append(info.name)

    with PassContext(instruments=[OnlyAfter()]):
        Identity()(make_module())
    assert calls == ["Identity"]
