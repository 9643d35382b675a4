"""Which of a database table's dtypes each mtpsim dtype reads (aic_rows.py builds the rows): the
candidates best first (`DtypeRule`), a candidate passed over when its decode-sized rows are
implausibly slow against bf16 (`choose_dtypes`), and for 4-bit experts the later candidates that
fill the model shapes the chosen one lacks (`filled_dtypes`).
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

GEMM_DTYPES = {"bf16": ("bfloat16",), "fp8": ("fp8_block", "fp8"), "fp4": ("nvfp4",)}
# fp4: NVFP4, else MXFP4 weights (with MXFP8 activations: SGLang's flashinfer_mxfp4 runner on
# sm100, DeepSeek-V4's; with 16-bit ones: GPT-OSS's), else INT4
MOE_DTYPES = {"bf16": ("bfloat16",), "fp8": ("fp8_block", "fp8"),
              "fp4": ("nvfp4", "w4a8_mxfp4_mxfp8", "w4a16_mxfp4", "int4_wo")}

@dataclass(frozen=True)
class DtypeRule:
    """How a table names its dtypes and shapes: the dtype column, mtpsim dtype -> the database's
    dtypes for it (best first), the shape columns, and the token column (decode-sized <= 64)."""

    column: str
    mapping: dict
    shape: tuple[str, ...]
    tokens: str
    # the columns that name a model's shape, where a later candidate's rows fill the shapes the
    # chosen dtype's rows do not hold (`filled_dtypes`), for the mtpsim dtypes in `fill_for`
    # (4-bit: NVFP4, MXFP4 and INT4 are the formats different checkpoints ship, each timed at its
    # own models' shapes; per-tensor FP8 is another path for the same block-FP8 checkpoints, whose
    # slower rows must not stand in for a shape the block rows lack)
    fill: tuple[str, ...] = ()
    fill_for: tuple[str, ...] = ()


GEMM_RULE = DtypeRule("gemm_dtype", GEMM_DTYPES, ("m", "n", "k"), "m")
MOE_RULE = DtypeRule("moe_dtype", MOE_DTYPES, ("num_tokens", "hidden_size", "inter_size", "topk", "num_experts",
                                                "moe_tp_size", "moe_ep_size"), "num_tokens",
                     fill=("hidden_size", "inter_size", "topk", "num_experts"), fill_for=("fp4",))
IMPLAUSIBLE = 2.0  # a low-precision kernel at decode sizes this many times slower than bf16 (median)


def choose_dtypes(df: pd.DataFrame, rule: DtypeRule) -> tuple[dict, dict]:
    """(mtpsim dtype -> the database dtype used, database dtype -> why it was passed over).

    Decode-sized GEMMs and expert kernels stream their weights, so a kernel reading 8-bit or
    4-bit weights is never much slower than the bf16 one at the same shape; a table whose
    decode-sized rows run at a median over IMPLAUSIBLE x the bf16 time was collected through
    another path than the one engines serve with (vLLM's fp8_block GEMM rows: 7-30x) and the
    next candidate is used instead."""
    present = set(df[rule.column].unique())
    small = df[df[rule.tokens] <= 64]
    best = small.groupby([rule.column, *rule.shape]).latency.min()
    bf16 = best.xs("bfloat16", level=0) if "bfloat16" in present else None
    chosen, rejected = {}, {}
    for ours, theirs in rule.mapping.items():
        for src in (d for d in theirs if d in present):
            if bf16 is not None and src != "bfloat16" and src in best.index.get_level_values(0):
                ratio = (best.xs(src, level=0) / bf16).dropna()
                if len(ratio) and ratio.median() > IMPLAUSIBLE:
                    rejected[src] = f"decode-sized rows take {ratio.median():.1f}x the bf16 time (median of {len(ratio)} shapes)"
                    continue
            chosen[ours] = src
            break
    return chosen, rejected


def filled_dtypes(df: pd.DataFrame, rule: DtypeRule) -> dict[str, dict[str, list[tuple]]]:
    """mtpsim dtype -> a later candidate -> the model shapes (rule.fill) whose rows it gives, where
    the chosen dtype's rows hold none: a table that times NVFP4 experts at some models' shapes and
    MXFP4 ones at DeepSeek-V4's (the MXFP4 checkpoint's kernel: SGLang's flashinfer_mxfp4 runner
    on B200) serves each model by its own. A candidate choose_dtypes passed over fills nothing."""
    if not rule.fill:
        return {}
    chosen, rejected = choose_dtypes(df, rule)
    out: dict[str, dict[str, list[tuple]]] = {}
    for ours, src in chosen.items():
        if ours not in rule.fill_for:
            continue
        taken = set(df[df[rule.column] == src][list(rule.fill)].drop_duplicates().itertuples(index=False, name=None))
        later = rule.mapping[ours][rule.mapping[ours].index(src) + 1:]
        for other in (d for d in later if d not in rejected):
            shapes = set(df[df[rule.column] == other][list(rule.fill)].drop_duplicates().itertuples(index=False, name=None))
            new = sorted(shapes - taken)
            if new:
                out.setdefault(ours, {})[other] = new
                taken |= shapes
    return out


def pick_dtypes(df: pd.DataFrame, rule: DtypeRule) -> pd.DataFrame:
    """Rows of the chosen database dtype for each mtpsim dtype, and of later candidates at the
    shapes it does not hold (`filled_dtypes`), relabelled with the mtpsim name."""
    chosen, _ = choose_dtypes(df, rule)
    parts = [df[df[rule.column] == src].assign(dtype=ours) for ours, src in chosen.items()]
    for ours, fills in filled_dtypes(df, rule).items():
        for src, shapes in fills.items():
            rows = df[df[rule.column] == src]
            at = pd.MultiIndex.from_frame(rows[list(rule.fill)]).isin(pd.MultiIndex.from_tuples(shapes, names=rule.fill))
            parts.append(rows[at].assign(dtype=ours))
    return pd.concat(parts, ignore_index=True) if parts else df.iloc[0:0].assign(dtype=[])
