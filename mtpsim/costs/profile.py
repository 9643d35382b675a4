"""Calibration profiles on disk: the op families a profile measures, and reading and validating
its CSVs (plain or gzipped). Its meta.yaml (schema, reading, what device and engine it names) is
profile_meta.py's; table_build.py turns the rows into grids, tables.py interpolates them.

A profile holds the families its meta.yaml lists under `families` (a profile without that list
holds every family `mtpsim calibrate` measures). A listed family whose file or column is missing
is a ScenarioError naming it, never a zero; a family a profile does not hold is priced by the
roofline and labelled so.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import get_args

from mtpsim.costs.profile_meta import kernels_release, load_meta, measured_on, not_readable, timed_engine

# where profiles are lives in profile_paths.py; these names stay importable from here
from mtpsim.costs.profile_paths import LEGACY_PREFIX as LEGACY_PREFIX
from mtpsim.costs.profile_paths import PROFILES_DIR as PROFILES_DIR
from mtpsim.costs.profile_paths import committed_profiles as committed_profiles
from mtpsim.costs.profile_paths import find_profile as find_profile
from mtpsim.costs.profile_paths import known_profiles as known_profiles
from mtpsim.costs.profile_paths import require_profile as require_profile
from mtpsim.errors import ScenarioError, short
from mtpsim.files import COUNT, NON_NEGATIVE, POSITIVE, TEXT, Column, file_row, first_repeat_rows, read_csv, read_once
from mtpsim.lazy import pandas as pd  # on first use: not on `mtpsim run`'s path
from mtpsim.specs import Dtype


@dataclass(frozen=True)
class Family:
    keys: tuple[str, ...]       # must match exactly (kind)
    dims: tuple[str, ...]       # fixed per config; another value is scaled by roofline work
    axes: tuple[str, ...]       # interpolated over, in log space
    monotone: tuple[str, ...]   # time may not fall as these grow
    optional: tuple[str, ...] = ()  # dims older profiles lack: read as ANY, matching every value
    # axes along which a time is the lowest measured at that value or beyond (table_build.py `_lower_envelope`):
    # a launch-bound kernel's isolated slow rows are noise, which a running maximum would carry up
    envelope: tuple[str, ...] = ()
    # axes that describe the model rather than the call (MoE's top_k and width): where no config has
    # the op's dims, the nearest one is chosen by them too (calibrated.py `_table`), as a config
    # timed only at other values extrapolates the op at that other kernel's efficiency
    match: tuple[str, ...] = ()
    values: dict[str, tuple[str, ...]] = field(default_factory=dict)  # text columns' closed sets of values


ANY = "*"
# axes that are means over a batch, not counts: every other axis is a whole number of tokens,
# rows, heads, bytes or experts, and a fractional one would be a grid point no lookup asks for
FRACTIONAL_AXES = ("touched", "tokens_per_expert")
# a profile's rows may outrun its ceilings a little (a copy measured from L2; the committed ones by
# up to ~5x); a row this many times faster than a ceiling says the ceiling is in other units
CEILING_SLACK = 100.0
OP_TIME = Column(low=0, above=True, high=3600)  # a measured op or layer takes under an hour
COUNT_AXIS = Column(low=0, above=True, integer=True)  # an axis is interpolated in log space: > 0

DTYPES = {"dtype": get_args(Dtype)}
MODES = {"mode": ("ll", "normal")}  # DeepEP's low-latency (decode) and normal (prefill) kernels

# routed experts by tokens and the distinct experts they touch: the `moe` and `moe_triton` tables
EXPERTS = Family((), ("dtype", "inter", "num_experts"), ("tokens", "touched", "top_k", "d"), ("tokens", "touched"),
                 values=DTYPES, match=("top_k", "d"))

FAMILIES = {
    "gemm": Family((), ("dtype",), ("m", "k", "n"), ("m",), values=DTYPES),
    # a full head's GEMM, or a centroid head's expansion of its chosen clusters (costs/ops.py lm_head_ops)
    "lm_head": Family(("kind",), ("dtype",), ("m", "k", "n"), ("m",), values={"kind": ("full", "expand"), **DTYPES}),
    # a batched matmul, one k x n weight per head (MLA's absorbed W_UK / W_UV: aiconfigurator's mla_bmm
    # tables, aic_rows.py `bmm_rows`); without a table the GEMM rows stand in (calibrated.py `predict`)
    "bmm": Family((), ("dtype", "k", "n"), ("m", "heads"), (), values=DTYPES, envelope=("m",)),
    # costs/lookup.py names an attention core's kind: gqa, swa (windowed), mla, frozen (query-only)
    "attention": Family(("kind",), ("kv_heads", "head_dim", "v_head_dim", "kv_dtype"), ("batch", "q", "kv", "heads"),
                        ("batch", "q", "kv"), optional=("kv_dtype",),
                        values={"kind": ("gqa", "swa", "mla", "frozen"), "kv_dtype": get_args(Dtype)}),
    # prefill attention (context FMHA, MLA run unabsorbed): requests of q prompt tokens from an empty
    # cache, causal (aiconfigurator's context_attention / context_mla tables, aic_rows.py
    # `context_rows`); calibrated.py prices prefill-sized cores (q > MLA_ABSORB_MAX_Q) from it,
    # scaled by roofline work where a request has cached KV before its chunk
    "prefill_attention": Family(("kind",), ("kv_heads", "head_dim", "v_head_dim", "kv_dtype"), ("batch", "q", "heads"),
                                ("batch", "q"), optional=("kv_dtype",),
                                values={"kind": ("gqa", "mla"), "kv_dtype": get_args(Dtype)}),
    "moe": EXPERTS,
    # the same experts through SGLang's Triton fused-MoE runner (block-FP8 only): what a release runs
    # where its engine rule says so (engines.py `moe_table`), while `moe` keeps the fastest kernel
    # per shape (calibration/aic_sources.py, the moe_triton source)
    "moe_triton": EXPERTS,
    # one GPU's experts under wide EP (DeepEP), by dispatch mode (ll | normal): calibrated.py `wide_ep_moe`
    "moe_wide_ep": Family(("mode",), ("dtype", "inter", "d"), ("experts", "tokens_per_expert"),
                          ("experts", "tokens_per_expert"), values={**MODES, **DTYPES}),
    "elementwise": Family((), ("d",), ("tokens",), ("tokens",)),
    "pass": Family((), (), ("batch", "q", "kv"), ("batch", "q", "kv")),
    "argmax": Family((), (), ("m", "n"), ("m", "n")),
    # communication: all-reduce by message bytes; all-to-all dispatch + combine by tokens per rank
    "allreduce": Family(("ranks",), (), ("bytes",), ("bytes",)),
    "alltoall": Family(("ranks",), ("d", "top_k"), ("tokens",), ("tokens",)),
    # NCCL reduce-scatter / all-gather by op and ranks, by the full buffer's bytes (aic_nccl.py)
    "collective": Family(("op", "ranks"), (), ("bytes",), ("bytes",), values={"op": ("all_gather", "reduce_scatter")}),
    # Gated DeltaNet's kernels a layer, by phase: decode (conv update + fused recurrent, one token a
    # request) or prefill (conv + chunked delta rule over q prompt tokens a request), per GPU heads
    # (aic_rows.py `gdn_rows`; costs/attention_core.py `linear_core`)
    "linear_state": Family(("phase",), ("kv_heads", "heads", "head_dim", "v_head_dim"), ("batch", "q"), ("batch", "q"),
                           values={"phase": ("decode", "prefill")}),
    # DeepSeek-V4's mHC kernels at one site, pre (mix, Sinkhorn, reduce, norm) or post (re-expand),
    # by tokens (aic_rows.py `mhc_rows`; costs/compressed.py `mhc_pre`, `hc_post`)
    "hyper_connection": Family(("kind",), ("d", "hc", "iters"), ("tokens",), ("tokens",), envelope=("tokens",),
                               values={"kind": ("pre", "post")}),
    # DeepEP by mode (ll | normal) and ranks, across nodes too: costs/wide_ep.py `dispatch_combine_time`
    "alltoall_wide_ep": Family(("mode", "ranks"), ("d", "top_k"), ("tokens",), ("tokens",), values=MODES),
}

# what `mtpsim calibrate` measures, so what a profile without a `families` list must hold
MEASURED_BY_CALIBRATE = ("gemm", "lm_head", "attention", "prefill_attention", "moe", "elementwise", "pass", "argmax")
# what a profile without a `families` list holds: calibrate's families before prefill_attention
# (profiles written since list their families, and one calibrated before that is read as it was)
MEASURED_BEFORE_PREFILL = tuple(f for f in MEASURED_BY_CALIBRATE if f != "prefill_attention")


def profile_families(meta: dict, where: str = "meta.yaml") -> tuple[str, ...]:
    """The op families a profile holds: meta.yaml's `families` keys, else what calibrate measures."""
    listed = meta.get("families")
    if listed is None:
        return MEASURED_BEFORE_PREFILL
    if not isinstance(listed, dict) or not listed:
        raise ScenarioError(where, "families", "must map op family names to their row counts or sources")
    unknown = [f for f in listed if f not in FAMILIES]
    if unknown:
        raise ScenarioError(where, f"families.{unknown[0]}", f"unknown op family (known: {', '.join(FAMILIES)})")
    return tuple(listed)


def unlisted_tables(folder: Path, meta: dict) -> list[str]:
    """Family tables in the folder that meta.yaml's `families` leaves out: never read, so their
    families are priced by the roofline (resolve.py warns of them)."""
    held = profile_families(meta, str(folder / "meta.yaml"))
    return [p.name for f in FAMILIES if f not in held for p in (folder / f"{f}.csv", folder / f"{f}.csv.gz")
            if p.exists() or p.is_symlink()]


@dataclass(frozen=True)
class Folder:
    """What a scenario point's pricing reads of its profile folder before any table (resolve.py
    `_resolve_pricing`): its meta.yaml, the device it names, the engine it times and the tables
    it leaves out. Read once per version of the folder (`held`)."""

    path: Path
    meta: dict

    @property
    def device(self) -> str:
        return measured_on(self.meta)

    @property
    def engine(self) -> str | None:
        return timed_engine(self.meta)

    @property
    def kernels(self) -> str | None:
        return kernels_release(self.meta)

    @cached_property
    def unlisted(self) -> tuple[str, ...]:
        """`unlisted_tables`, looked for once: asked only of a profile that prices the point,
        so a `families` list it refuses is refused where it was before."""
        return tuple(unlisted_tables(self.path, self.meta))


@read_once
def held(folder: Path) -> Folder:
    """The profile folder `folder` as a Folder, shared by every sweep point that names it while
    no file in it changes (textfiles.py `version`: each file's name, mtime and size; a table
    file added or removed changes it too): one version check a point, where each point asked
    load_meta three times (a version check each) and looked for every table file meta.yaml
    leaves out. Not to be changed in place."""
    return Folder(folder, load_meta(folder / "meta.yaml"))


def family_path(folder: Path, family: str) -> Path:
    """`<family>.csv`, or its gzipped `<family>.csv.gz` (how the large GPU profiles are committed);
    both at once is a ScenarioError: which one prices the family would be a guess."""
    plain = folder / f"{family}.csv"
    packed = folder / f"{family}.csv.gz"
    if plain.is_file() and packed.is_file():
        raise ScenarioError(str(plain), "", f"{packed.name} is there too: keep one table per op family")
    return packed if packed.is_file() else plain


def profile_files(folder: Path) -> list[Path]:
    """The files a profile may be read from, by name: meta.yaml, each op family's table and
    layers.csv (plain or gzipped). What the profile cache keys an entry by, so that other files
    in the folder (a core dump, the holdout rows) are neither read nor hashed."""
    names = ["meta.yaml", *(f"{t}.csv{gz}" for t in (*FAMILIES, "layers") for gz in ("", ".gz"))]
    return [folder / name for name in names]


# why a profile table without a final line end is refused: calibrate ends every row with one
CUT_OFF = ("calibrate ends every row with a line end, so the file was cut short; one edited by hand needs a line end "
           "after its last row")


def read_family(path: Path, family: str) -> pd.DataFrame:
    """A family CSV with every column the schema names: axes and times positive and finite,
    flops non-negative, key and dim columns present (optional dims read as ANY)."""
    if not path.is_file():
        raise not_readable(path, f" for op family {family!r}")
    f = FAMILIES[family]
    columns = dict.fromkeys((*f.keys, *f.dims), TEXT) | {"flops": NON_NEGATIVE, "bytes": NON_NEGATIVE} | \
        {a: POSITIVE if a in FRACTIONAL_AXES else COUNT_AXIS for a in f.axes} | {"time_s": OP_TIME}
    df = read_csv(path, columns, optional=f.optional, written_whole=CUT_OFF)
    for col in f.optional:
        if col not in df.columns:
            df[col] = ANY
    for col in (*f.keys, *f.dims):
        if df[col].isna().any():
            raise ScenarioError(str(path), col, f"row {int(df[col].isna().to_numpy().argmax()) + 2}: empty")
        if col not in f.values:  # a size (ranks, heads, widths, experts): matched as text, scaled by its number
            size = r"[1-9][0-9]*|\*" if col in f.optional else r"[1-9][0-9]*"  # '*' (any) only where older profiles lack it
            bad = ~df[col].astype(str).str.fullmatch(size)
            if bad.any():
                row = int(bad.to_numpy().argmax())
                raise ScenarioError(str(path), col, f"row {row + 2}: {short(df[col].iloc[row])} is not a whole number "
                                    "above 0 (a size the lookups match and scale by)")
    for col, allowed in f.values.items():  # a value no lookup names would leave its rows unread
        unknown = ~df[col].astype(str).isin((*allowed, ANY))
        if unknown.any():
            row = int(unknown.to_numpy().argmax())
            raise ScenarioError(str(path), col, f"row {row + 2}: {short(df[col].iloc[row])} is not one of "
                                f"{', '.join(allowed)}")
    _any_alone(df, f, path)
    again = first_repeat_rows(df, [*f.keys, *f.dims, *f.axes])
    if again is not None:  # which of two times for one shape would price it depends on the row order
        raise ScenarioError(str(path), "", f"rows {file_row(df, again[0])} and {file_row(df, again[1])} time the same "
                            "shape: keep one")
    return df


def _any_alone(df: pd.DataFrame, f: Family, path: Path) -> None:
    """An optional dim (`*`: any value, what older profiles hold) is either `*` or a value across
    one config's rows, not both: a lookup for that value would take the named rows or the `*`
    ones depending on which table it reaches first."""
    for col in f.optional:
        rest = [c for c in (*f.keys, *f.dims) if c != col]
        anys = df[col].astype(str) == ANY
        if not anys.any() or anys.all():
            continue
        named = df.loc[~anys, rest].drop_duplicates()
        clash = df[anys].reset_index().merge(named, on=rest) if rest else df[anys].reset_index()
        if len(clash):
            raise ScenarioError(str(path), col, f"row {int(clash['index'].iloc[0]) + 2}: {ANY!r} (any) beside rows "
                                f"that name a {col} for the same {', '.join(rest) or 'table'}: give each row its {col}")


def check_ceilings(family: str, df: pd.DataFrame, meta: dict, where: str) -> None:
    """A ScenarioError when a row moves bytes or flops CEILING_SLACK times faster than meta.yaml's
    ceilings allow: the cost model floors every op at its work over the ceilings, so a ceiling in
    the wrong units (B/s typed as MB/s) would price every op hours long without a word."""
    for key, column in (("copy_bytes_per_s", "bytes"), ("matmul_flops_per_s", "flops")):
        rate = (df[column] / df.time_s).to_numpy()
        fastest = int(rate.argmax())
        if rate[fastest] > CEILING_SLACK * meta["ceilings"][key]:
            raise ScenarioError(where, f"ceilings.{key}", f"{meta['ceilings'][key]:.3g} is below what {family}'s row "
                                f"{fastest + 2} measured ({rate[fastest]:.3g} {column}/s, over {CEILING_SLACK:g} times "
                                "as fast): every op would be floored at its work over this ceiling")


def check_rows(family: str, df: pd.DataFrame, meta: dict, where: str) -> None:
    """The rows meta.yaml's `families` says a table holds (a count, or a source record's `rows`)
    are the rows read: a table cut short, or one edited after meta.yaml was written, is refused."""
    listed = (meta.get("families") or {}).get(family)
    count = listed.get("rows") if isinstance(listed, dict) else listed
    key = f"families.{family}" + (".rows" if isinstance(listed, dict) else "")
    if listed is not None and count is not None and (type(count) is not int or count < 1):
        # a source record's count in another form (many, 15342.0) turned the check off without a word
        raise ScenarioError(where, key, f"{short(count)} is not a count of rows (a whole number above 0)")
    if isinstance(count, int) and not isinstance(count, bool) and count != len(df):
        raise ScenarioError(where, key, f"lists {count:,} rows, and {family}'s table holds {len(df):,}: "
                            "a table cut short or edited? give the count it holds")


LAYER_COLUMNS = {"layer": TEXT, "scale": POSITIVE, "batch": Column(low=1, integer=True),
                 "q": Column(low=1, integer=True), "kv": COUNT, "d": Column(low=1, integer=True), "time_s": OP_TIME}


def read_layers(folder: Path) -> pd.DataFrame | None:
    """layers.csv (whole decoder layers timed by `mtpsim calibrate`; or layers.csv.gz, not both), or
    None when the profile has none."""
    path = family_path(folder, "layers")
    if not path.is_file():
        return None
    df = read_csv(path, LAYER_COLUMNS, written_whole=CUT_OFF)
    short_kv = df.kv < df.q
    if short_kv.any():
        raise ScenarioError(str(path), "kv", f"row {int(short_kv.to_numpy().argmax()) + 2}: kv counts the pass's own "
                            "q tokens, so it cannot be below q")
    return df
