"""The manifest records and header comment lines of GEMM steps' variants (tiers of
:mod:`.gemm_plan`): the implementation name, the :class:`~byocc.backends.codegen.Variant`
record (tile, cluster, alignments, split-K, K padding, M bucket) and the header lines a GEMM
or conv step shares. A module of its own so that :mod:`.gemm_plan` stays the planner (it
imports nothing of the planner: a tier is anything with the fields of ``gemm_plan.Tier``).
"""

from __future__ import annotations

from typing import Any

from ..codegen import Variant
from ..cuda.wrapper import shape_text


def impl_name(tier) -> str:
    """The implementation name of a tier in the manifest and the wrapper's comments."""
    if tier.arch == "sm90":
        return f"cutlass3x_tma_ws_{tier.cfg.schedule}"
    if tier.arch == "sm80":
        return "cutlass2x_tensorop"
    return "generic_simt"


def variant(tier) -> Variant:
    """The manifest record of one tier."""
    if tier.arch == "generic":
        return Variant("sm_80", "generic_simt", {"align": 1, "epilogue": "generic (fused)"})
    cfg = tier.cfg
    params: dict[str, Any] = {"tile": list(cfg.tile), "align": min(cfg.align_a, cfg.align_b, cfg.align_d),
                              "alignments": {"a": cfg.align_a, "b": cfg.align_b, "d": cfg.align_d},
                              "kernel": cfg.path}
    if tier.arch == "sm90":
        params["cluster"] = list(cfg.cluster)
        if cfg.stream_k:
            params["stream_k"] = True
        if cfg.swizzle != 1:
            params["swizzle"] = cfg.swizzle
        if tier.splits > 1:
            params["split_k"] = tier.splits
        if tier.pad_k is not None:
            params["pad_k"] = tier.pad_k
        if tier.m_range is not None:
            params[f"{tier.bucket_dim}_bucket"] = list(tier.m_range)
    else:
        params["stages"] = cfg.stages
    params["epilogue"] = ("fused" if tier.fused else
                          "split-K reduction" if tier.splits > 1 else "generic kernel")
    return Variant("sm_90a" if tier.arch == "sm90" else "sm_80", impl_name(tier), params)


def epilogue_header(st, plan, generic: str, tier_text) -> list[str]:
    """The header comment lines a GEMM or conv step shares: its bias and residual with their
    operand classes, then one line per tier in run-time order (``generic`` names the generic
    kernel's line, ``tier_text(tier)`` writes a CUTLASS tier's)."""
    lines = []
    if st.bias is not None:
        lines.append(f"bias {shape_text(st.bias_sinfo)}: {plan.bias_class}")
    if st.residual is not None:
        lines.append(f"residual {shape_text(st.residual_sinfo)}: {plan.residual_class}")
    for tier in plan.tiers:
        if tier.arch == "generic":
            lines.append(f"variant {generic} (fp32/int32 accumulation, generic epilogue fused)")
        else:
            splits = getattr(tier, "splits", 1)  # conv tiers have none of the three
            pad_k, m_range = getattr(tier, "pad_k", None), getattr(tier, "m_range", None)
            extra = ("" if tier.fused else
                     f" + split-K reduction ({splits} slices)" if splits > 1 else " + generic epilogue")
            if pad_k is not None:
                extra += f", K padded to {pad_k} in scratch"
            if m_range is not None:
                lo, hi = m_range
                extra += f", for {getattr(tier, 'bucket_dim', 'm').upper()} in [{lo}, {'inf' if hi is None else hi}]"
            lines.append(tier_text(tier) + extra)
    return lines


__all__ = ["epilogue_header", "impl_name", "variant"]
