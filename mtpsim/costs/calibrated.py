"""Calibrated cost model: ops priced from a measured profile folder.

A profile (written by `mtpsim calibrate`) holds one CSV per op family: a product grid over the
family's *axes* for each *config* (the fixed dims: head widths, expert width, dtype), with the
op's flops, bytes and the measured median `time_s`. An op is priced by, in order:

- `calibrated`: its config was measured and its axes lie inside the grid: log-linear
  interpolation of time over log axes (exact at grid points; a measured time that falls as
  tokens, batch or KV grow is lifted to the running maximum when loading, so the model is
  monotone in them);
- `calibrated-scaled`: inside the grid of the nearest measured config (other head widths, expert
  width or dtype): t = f + (t_ref - f) * w(op) / w_ref, where w is the roofline work
  max(flops / matmul ceiling, bytes / copy ceiling) and f the config's fastest time (the
  per-call floor, which does not scale with work);
- `roofline-scaled`: outside the measured range (or in a cell skipped as too slow): the same
  affine scaling from the nearest measured cell, i.e. the roofline at that cell's efficiency;
- `extrapolated`: attention with more query tokens per request than the profile measured
  (verify and extend against cached KV; the measured GPU tables hold decode rows, q = 1 only):
  the measured time at the largest measured q, scaled by the roofline work of the two shapes,
  affinely as above but above the launch's own floor (the time at the grid's least KV for that
  batch, q and heads: tables.slice_floor), which extra queries do not scale. Past
  MLA_ABSORB_MAX_Q query tokens a request in a prompt or its chunk (not a verify or draft pass:
  AttentionKernel's `decode_path`), a profile with `prefill_attention` rows prices the core from
  them instead (`_prefill`:
  `calibrated` for a fresh prompt of a measured shape, else `calibrated-scaled` by work); the
  routing is here, not in lookup_point, because only the profile knows whether it has them;
- `roofline`: families the profile does not hold (linear-attention state; elementwise, argmax
  and pass framing in a converted GPU profile: bytes plus the launch figures) and collectives
  at rank counts no table measured or spanning nodes (the tables are one node's; roofline.py
  adds the network leg, and labels `extrapolated` what lies past the ranks its floors were fitted on
  or crosses the NVLink domain).

Stand-ins, labelled with the rows they came from: query-only (frozen-KV) and sliding-window
attention without a table of their own use the GQA decode rows (the same kernel over a capped
or borrowed cache: `calibrated:gqa`); LM heads without a table use the GEMM rows
(`calibrated:gemm`), and so do batched matmuls (MLA's W_UK / W_UV), as the one GEMM of the same
flops and weights (ops.as_gemm). Communication (`allreduce` by message bytes, `alltoall` dispatch + combine
by tokens per rank) is priced from measured tables when the profile holds them.

Host time per iteration (`host_s(design, batch)`): measured per design around the
verification loop by `mtpsim calibrate` (meta.yaml `host_s`), else the serving engine's figure.

Layer glue (`layer.glue` ops): what a whole layer costs beyond its priced ops, fitted from the
profile's whole-layer measurements (layer.py `fit_glue`: the rows, their ops and the fit), widths
layer.HELDOUT_SCALE held out.

Overheads: on CPU every measured time already includes PyTorch's per-call dispatch (meta.yaml
`launch.included_in_op_times: true`), so kernel and pass launch costs are 0. On CUDA, times are
in-graph kernel times: eager passes add (launch_s - graph_kernel_s) per kernel, graph passes
one graph_replay_s.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from mtpsim.costs.core_pricer import CorePricer, FramePricer, split_time
from mtpsim.costs.layer import LAYER_KINDS, fit_glue
from mtpsim.costs.lookup import COMM, dims_distance, dims_match, fewer_queries, lookup_point, stand_in_tables
from mtpsim.costs.op import MLA_ABSORB_MAX_Q
from mtpsim.costs.ops import AttentionKernel, BatchLens, Op, as_gemm, pass_frame
from mtpsim.costs.profile import (
    FAMILIES,
    Family,
    check_ceilings,
    check_rows,
    family_path,
    profile_families,
    read_family,
    read_layers,
)
from mtpsim.costs.profile_meta import load_meta
from mtpsim.costs.roofline import OpTime, RooflineCosts
from mtpsim.costs.table_build import build_tables
from mtpsim.costs.tables import Table, along_work, interpolate, kv_slice, nearest_cell, scaled, slice_floor
from mtpsim.costs.wide_ep import wide_ep_time
from mtpsim.engines import EngineSpec
from mtpsim.errors import ScenarioError, short
from mtpsim.hardware_spec import HardwareSpec
from mtpsim.lazy import pandas as pd  # on first use: not on `mtpsim run`'s path

__all__ = ["CalibratedCosts", "FAMILIES", "Family", "Table"]


def _speed(table: Table) -> float:
    """A table's median log work per second over its timed cells: how fast its kernel ran, whatever the shape."""
    measured = ~np.isnan(table.log_t) if table.measured is None else table.measured
    return float(np.median((table.log_w - table.log_t)[measured])) if measured.any() else -math.inf


class CalibratedCosts:
    """Prices ops from a profile folder; same interface as RooflineCosts."""

    name = "calibrated"

    def __init__(self, tables: dict, meta: dict, hw: HardwareSpec, layers: pd.DataFrame | None = None,
                 engine: EngineSpec | None = None):
        self.tables, self.meta, self.hw = tables, meta, hw
        self.roofline = RooflineCosts(hw, engine)
        c = meta["ceilings"]
        self.peak_flops, self.peak_bytes = c["matmul_flops_per_s"], c["copy_bytes_per_s"]
        # No op streams its bytes faster than the best measured copy: on a GPU every decode pass
        # moves the whole model through a few tens of MB of L2, so no weight or KV block is still
        # cached when it is next read. Not on a CPU: the shrunk verification models fit its caches,
        # and its small rows measured from cache are what the verification loop runs.
        self.stream_floor = meta["device"] != "cpu"
        self.launch = meta["launch"]
        # the attention op the profile timed reads every request up to the batch's longest
        self.kv_key = "kv_max" if meta.get("attention_kv") == "batch_max" else "kv_tokens"
        self._resolved: dict = {}  # (family, keys, dims) -> _table's answer
        self._core_pricers: dict = {}  # (kernel, graphs) -> core_pricer's answer
        self.glue = fit_glue(self, layers) if layers is not None else {}

    @classmethod
    def from_profile(cls, path, hw: HardwareSpec, engine: EngineSpec | None = None) -> CalibratedCosts:
        """Load and validate `path`; a missing file, column or meta key is a ScenarioError naming it."""
        folder = Path(path)
        if not folder.is_dir():
            raise ScenarioError(str(folder), "", "profile folder not found (run `mtpsim calibrate`)")
        meta, where = load_meta(folder / "meta.yaml"), str(folder / "meta.yaml")
        tables = {}
        for f in profile_families(meta, where):
            df = read_family(family_path(folder, f), f)
            check_rows(f, df, meta, where)
            check_ceilings(f, df, meta, where)
            tables[f] = build_tables(f, df, meta["ceilings"])
        layers = read_layers(folder)
        if layers is not None and not meta.get("dtype"):
            raise ScenarioError(str(folder / "meta.yaml"), "dtype", "a profile with layers.csv needs the dtype its layers ran in")
        unknown = [] if layers is None else sorted(set(layers.layer) - set(LAYER_KINDS))
        if unknown:
            raise ScenarioError(str(folder / "layers.csv"), "layer", f"unknown layer kind {short(unknown[0])} "
                                f"(known: {', '.join(LAYER_KINDS)})")
        return cls(tables, meta, hw, layers, engine)

    # ------------------------------------------------------------------ interface
    @property
    def engine(self):
        return self.roofline.engine

    @property
    def has_glue(self) -> bool:
        """Whether it prices layer glue: the profile has whole-layer timings to fit it on."""
        return bool(self.glue)

    def kernel_launch_s(self, graphs: bool) -> float:
        """Per-kernel cost not inside the measured times (0 on CPU: dispatch is measured)."""
        if self.launch["included_in_op_times"] or graphs:
            return 0.0
        return max(0.0, self.launch["launch_s"] - self.launch["graph_kernel_s"])

    def pass_launch_s(self, graphs: bool) -> float:
        if self.launch["included_in_op_times"] or not graphs:
            return 0.0
        return self.launch["graph_replay_s"]

    def host_s(self, design: str, batch: int) -> float:
        """Host seconds per iteration outside the passes, as `mtpsim calibrate` timed them around
        the verification loop (meta.yaml `host_s`: design -> batch -> seconds; linear in batch
        between measured batches, held flat beyond); the serving engine's figure otherwise."""
        table = (self.meta.get("host_s") or {}).get(design)
        if not table:
            return self.roofline.host_s(design, batch)
        batches = sorted(table)
        return float(np.interp(batch, batches, [table[b] for b in batches]))

    def time(self, op: Op, graphs: bool) -> OpTime:
        if op.family == "glue":
            return OpTime(0.0, 0.0, 0.0, self.glue_s(op.shape["layer"], op.shape["tokens"], op.shape["d"]), "calibrated")
        found = wide_ep_time(self, op, graphs) or self.predict(op)
        if found is None:
            return self.roofline.time(op, graphs)
        t, source = found
        if op.family in COMM:  # a measured collective: its whole time is communication
            return OpTime(0.0, 0.0, t, 0.0, source)
        fixed = min(t, op.kernels * self.launch["call_s"]) if self.launch["included_in_op_times"] else 0.0
        return split_time(t, fixed, self.roofline.compute_s(op), self.roofline.memory_s(op),
                          op.kernels * self.kernel_launch_s(graphs), source)

    def glue_s(self, kind: str, tokens: float, d: int) -> float:
        """A layer's glue seconds, a + b * tokens * d as fitted for its kind (else for the measured
        kind with the same attention, then the same FFN); 0 when none was measured."""
        a, f = kind.split("_", 1) if "_" in kind else (kind, "")
        fit = self.glue.get(kind) or next((v for k, v in self.glue.items() if k.startswith(a + "_")), None) or \
            next((v for k, v in self.glue.items() if f and k.endswith("_" + f)), None)
        if fit is None:
            return 0.0
        return fit[0] + fit[1] * tokens * d

    def core_pricer(self, kernel: AttentionKernel, graphs: bool) -> CorePricer | None:
        """`CorePricer` for `kernel`'s cores in passes with or without graphs, or None where its
        cores take `time`'s other roads (linear and sliding-window attention, no table); made
        once per kernel and graphs."""
        key = (kernel, graphs)
        if key not in self._core_pricers:
            self._core_pricers[key] = self._core_pricer(kernel, graphs)
        return self._core_pricers[key]

    def _core_pricer(self, kernel: AttentionKernel, graphs: bool) -> CorePricer | None:
        if kernel.att.kind in ("linear", "compressed") or kernel.att.window is not None:
            return None
        probe = kernel.core(BatchLens.uniform(1, [1], 1, 1))  # a core of this kernel: its lookup keys
        family, keys, dims, _ = lookup_point(probe, self.kv_key)
        table, exact, stand_in = self._table(family, keys, dims)
        flop_rate, byte_rate = self.roofline.rates(probe)
        if table is None or flop_rate is None:
            return None
        prefill = self.prefill_table(keys, dims) is not None  # prefill-sized cores take `time`'s road
        return CorePricer(self, kernel, table, exact, stand_in, flop_rate, byte_rate, graphs, prefill)

    def frame_pricer(self, batch: int, q: float, d: int, graphs: bool):
        """`FramePricer` for the pass frames of `batch` requests of q query tokens and width d, or
        the roofline's where the profile has no pass table (`time` falls back to it)."""
        probe = pass_frame(batch, q, 0.0, d)  # the frame's lookup keys and rates; its kv is each call's
        family, keys, dims, x = lookup_point(probe, self.kv_key)
        table, exact, _ = self._table(family, keys, dims)
        if table is None:
            return self.roofline.frame_pricer(batch, q, d, graphs)
        return FramePricer(self, probe, table, kv_slice(table, x), exact, graphs)

    # ------------------------------------------------------------------ lookup
    def predict(self, op: Op) -> tuple[float, str] | None:
        """(seconds, source) from the profile, or None for the plain roofline. Never faster than
        the op's bytes at this GPU's best measured stream (`stream_floor`): a row that fast did
        less work than the op (a MoE row that touched fewer experts than its label), and the time
        is that floor instead, its source marked `-floored`."""
        if op.family == "bmm" and not self.tables.get("bmm"):
            # no batched-matmul table (a CPU profile, an older conversion): priced as the one GEMM
            # of the same flops and weights, labelled as the stand-in it is
            found = self.predict(as_gemm(op))
            return found and (found[0], found[1] + ":gemm")
        found = self._lookup(op)
        if found is None:
            return None
        t, kind, stand_in = found
        floor = op.bytes / self.peak_bytes if self.stream_floor and op.family not in COMM else 0.0
        return (floor, kind + "-floored" + stand_in) if t < floor else (t, kind + stand_in)

    def _lookup(self, op: Op) -> tuple[float, str, str] | None:
        """(seconds, how the table priced it, stand-in label), or None for the plain roofline."""
        point = lookup_point(op, self.kv_key)
        if point is None or op.shape.get("nodes", 1) > 1:  # the tables measured one node's collectives
            return None
        family, keys, dims, x = point
        runner = ""
        if family == "moe" and not op.shape.get("wide_ep") and self.tables.get("moe_triton") and self.engine is not None and \
                self.engine.moe_table(self.hw, dims["dtype"]) == "moe_triton":
            # the release runs these experts through its Triton runner (engine rule; engines.py
            # `moe_table`): the profile's table of that kernel, named in the op's source (wide EP's
            # experts run DeepEP's grouped GEMM instead: costs/wide_ep.py)
            family, runner = "moe_triton", ":moe_triton"
        table, exact, stand_in = self._table(family, keys, dims, x)
        if table is None:
            return None
        stand_in += runner
        if family == "elementwise":  # the grid's tokens at its width d holding as many elements
            x = {"tokens": x["elements"] / table.dims["d"]}
        work = self.work_s(op)
        if family == "attention" and x["q"] > MLA_ABSORB_MAX_Q and not op.shape.get("decode_path"):
            prefill = self._prefill(keys, dims, x, work)
            if prefill is not None:
                return prefill
        if family == "attention" and x["q"] > table.grid["q"][0][-1] * (1 + 1e-9):
            # more query tokens than measured (verify): the time at the largest measured q, scaled
            # by work from that point's work: the op's own at q_ref inside the grid, else the
            # nearest cell's, whose batch or KV differ from the op's too (scaling from the op's
            # work at q_ref there would price the cell's KV as the op's: a verify past the grid
            # below the decode of the same batch and KV, `roofline-scaled` from that cell)
            q, q_ref = x["q"], table.grid["q"][0][-1]
            x = {**x, "q": q_ref}
            hit, floor = interpolate(table, x), None
            if hit is not None:  # the launch's own latency at this batch and heads does not scale (slice_floor)
                # the op's own work at q_ref where the table is its config's; another config's cell
                # scales from the cell's work, as `calibrated-scaled` does (the op's work at q_ref
                # dropped that step: Gemma 4's 512-wide heads read a 128-wide table and a 2-token
                # verify cost 41% less than the decode)
                log_t, work_ref = hit[0], self.work_s(fewer_queries(op, q_ref / q)) if exact else math.exp(hit[1])
                floor = slice_floor(kv_slice(table, x)) if "kv" in table.axes else None
            else:
                log_t, log_w = nearest_cell(table, x)
                work_ref = math.exp(log_w)
            return scaled(table, math.exp(log_t), work_ref, work, floor), "extrapolated", stand_in
        hit = interpolate(table, x)
        if hit is not None and exact and hit.measured:
            return math.exp(hit.log_t), "calibrated", stand_in
        kind = "calibrated-scaled" if hit is not None else "roofline-scaled"
        if hit is not None and "touched" in table.axes:
            # MoE off its timed routings: read along the times measured at the op's top_k and
            # width, by work (tables.along_work), not scaled from a cell filled from a neighbour,
            # whose time holds a launch-bound floor the scaling took for work (DeepSeek-V3's
            # 3-token verify on H200 priced its experts below its 2-token verify's)
            t = along_work(table, x, work)
            if t is not None:
                return t, kind, stand_in
        log_t, log_w = hit[:2] if hit is not None else nearest_cell(table, x)
        return scaled(table, math.exp(log_t), math.exp(log_w), work), kind, stand_in

    def prefill_table(self, keys: tuple, dims: dict) -> Table | None:
        """The prefill-attention table an attention core of kind keys[0] and `dims` reads when its
        queries are prefill-sized (gqa and mla without a window: the context kernels the tables
        time), or None (a windowed or query-only kind, or a profile without one)."""
        return self._prefill_lookup(keys, dims)[0]

    def _prefill_lookup(self, keys: tuple, dims: dict) -> tuple[Table | None, bool, str]:
        """`_table`'s answer for the prefill-attention family, (None, False, "") where the kind or
        the profile has none."""
        if keys[0] not in ("gqa", "mla") or not self.tables.get("prefill_attention"):
            return None, False, ""
        return self._table("prefill_attention", keys, dims)

    def _prefill(self, keys: tuple, dims: dict, x: dict, work: float) -> tuple[float, str, str] | None:
        """A prefill-sized core (q > MLA_ABSORB_MAX_Q per request) from the prefill table at its
        batch, q and heads: a fresh prompt's measured time, scaled by the roofline work of the op
        (cached KV before the chunk, another config) over the row's; None without a table."""
        table, exact, stand_in = self._prefill_lookup(keys, dims)
        if table is None:
            return None
        px = {"batch": x["batch"], "q": x["q"], "heads": x["heads"]}
        hit = interpolate(table, px)
        # the op's work equal to the row's, to the CSV's digits: a fresh prompt of a measured config
        if hit is not None and exact and hit.measured and abs(work - math.exp(hit.log_w)) <= 1e-4 * work:
            return math.exp(hit.log_t), "calibrated", stand_in
        kind = "calibrated-scaled" if hit is not None else "roofline-scaled"
        log_t, log_w = hit[:2] if hit is not None else nearest_cell(table, px)
        return scaled(table, math.exp(log_t), math.exp(log_w), work), kind, stand_in

    def _table(self, family: str, keys: tuple, dims: dict | None, x: dict | None = None) -> tuple[Table | None, bool, str]:
        """The table an op's (family, keys, dims) reads, whether its config was measured, and the
        stand-in label; resolved once per distinct key (ops of one shape recur every pass). Where
        no config has the dims, the nearest: by dims, and by the family's `match` axes at the
        op's point `x` (MoE's top_k and width: Step-3.5-Flash's 288 experts top-8 on H200 took a
        256-expert top-22 config timed at a fifth of the bandwidth a 160-expert top-8 one ran at,
        and its experts cost 13x their bytes)."""
        near = {a: x[a] for a in FAMILIES[family].match} if x is not None and family in FAMILIES else {}
        key = (family, keys, None if dims is None else tuple(dims.items()), tuple(near.items()))
        found = self._resolved.get(key)
        if found is None:
            tables, stand_in = stand_in_tables(self.tables, family, keys)
            exact = [t for t in tables if dims is None or dims_match(t.dims, dims)]
            if exact or not tables:
                table = exact[0].table() if exact else None
            elif near:
                # the three nearest configs, and of them the one of middling speed: a family's tables hold
                # whole configs timed at a fraction of their neighbours' bandwidth (h200-trtllm's BF16
                # experts at 256 x 256: 0.56 TB/s beside 2-4 TB/s), and the nearest by shape alone may be one
                closest = sorted(tables, key=lambda t: dims_distance(t.dims, dims) + t.gap(near))[:3]
                table = sorted((t.table() for t in closest), key=_speed)[len(closest) // 2]
            else:
                table = min(tables, key=lambda t: dims_distance(t.dims, dims)).table()
            found = self._resolved[key] = (table, bool(exact), stand_in)
        return found

    def work_s(self, op: Op) -> float:
        return max(op.flops / self.peak_flops, op.bytes / self.peak_bytes)
