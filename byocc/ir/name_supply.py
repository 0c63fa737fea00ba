"""TVM's name supply (docs/partitioning.md#name-supply): ``lv``, ``lv1``, ``lv2`` ..."""

from __future__ import annotations


class NameSupply:
    """``fresh(hint)``: dots become ``_``; a taken key gets the next free numeric suffix
    (no separator). Only names this supply produced are known to it."""

    __slots__ = ("used",)

    def __init__(self) -> None:
        self.used: dict[str, int] = {}

    def fresh(self, hint: str) -> str:
        key = hint.replace(".", "_")
        used = self.used
        if key not in used:
            used[key] = 0
            return key
        n = used[key]
        while True:
            n += 1
            cand = f"{key}{n}"
            if cand not in used:
                break
        used[key] = n
        used[cand] = 0
        return cand

    def reserve(self, name: str) -> None:
        self.used.setdefault(name, 0)
