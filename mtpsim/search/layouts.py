"""The deployments of N GPUs a search tries, and which of them run the scenario.

A deployment (a `Layout`) is `replicas` copies of one replica of `tp` GPUs, its experts split over
`ep` groups and its attention over `attention_dp` groups (layout_schema.Parallel). A layout is
kept only when the scenario checks accept the shard (layout_checks.py: heads, widths and experts
divisible, nodes) and its weights leave a KV pool that holds the longest request (memory.py, the
engine's pool rule). space.py runs designs, steps and loads on the kept layouts.
"""
from __future__ import annotations

from dataclasses import dataclass

from mtpsim import scenario as sc
from mtpsim.costs import build_pricer
from mtpsim.designs import BASELINE, DesignShape
from mtpsim.errors import ScenarioError
from mtpsim.memory import memory_budget, pool_rule
from mtpsim.schema import max_length
from mtpsim.search.bounds import SearchBounds


@dataclass(frozen=True)
class Layout:
    """One deployment of the GPUs: replicas x (tp GPUs, ep expert groups, attention_dp groups)."""

    replicas: int
    tp: int
    ep: int
    attention_dp: int

    @property
    def gpus(self) -> int:
        return self.replicas * self.tp

    @property
    def label(self) -> str:
        """`2x tp4 ep4 adp1`: how tables and the CSV name it."""
        return f"{self.replicas}x tp{self.tp} ep{self.ep} adp{self.attention_dp}"


def layout_of(s: sc.Scenario) -> Layout:
    """The layout a scenario's `parallel:` section names."""
    p = s.parallel
    return Layout(p.dp, p.tp, p.ep, p.attention_dp)


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def candidate_layouts(gpus: int, bounds: SearchBounds, has_experts: bool) -> list[Layout]:
    """Every replicas x tp x ep x attention_dp that multiplies out to `gpus`, within the bounds."""
    out = []
    for tp in divisors(gpus):
        if bounds.tp is not None and tp not in bounds.tp:
            continue
        eps = [e for e in divisors(tp) if bounds.ep is None or e in bounds.ep] if has_experts else [1]
        adps = [a for a in divisors(tp) if bounds.attention_dp is None or a in bounds.attention_dp]
        out += [Layout(gpus // tp, tp, ep, adp) for ep in eps for adp in adps]
    return out


def no_layout_cause(gpus: int, bounds: SearchBounds, experts: bool) -> tuple[str, str]:
    """(the search bound, why) that leaves candidate_layouts empty: no tp tried divides the GPUs,
    or no ep (attention_dp) tried divides a tp tried, or no tp tried takes both."""
    def listed(values) -> str:
        return ", ".join(map(str, values))
    tps = [t for t in divisors(gpus) if bounds.tp is None or t in bounds.tp]
    if not tps:
        return "tp", f"{listed(bounds.tp)}: no tp tried divides the {gpus} GPUs (tp {listed(divisors(gpus))} would)"
    asked = {"ep": bounds.ep if experts else None, "attention_dp": bounds.attention_dp}
    for key, values in asked.items():
        if values is not None and not any(t % v == 0 for t in tps for v in values):
            return key, f"{listed(values)}: divides no tp tried ({listed(tps)}): a replica's {key} divides its tp"
    return "tp", (f"{listed(tps)}: no tp tried is divided by both an ep ({listed(asked['ep'] or [1])}) and an "
                  f"attention_dp ({listed(asked['attention_dp'] or [1])}) tried")


def at_layout(base: sc.Scenario, layout: Layout, speculative: dict) -> sc.Scenario:
    """The base scenario on `layout` with `speculative` (validated: a ScenarioError if it cannot run)."""
    data = base.model_dump(exclude={"sweep", "search"}, exclude_none=True)
    data["parallel"] = {**data.get("parallel", {}), "tp": layout.tp, "ep": layout.ep, "dp": layout.replicas,
                        "attention_dp": layout.attention_dp}
    data["speculative"] = speculative
    if speculative["design"] == BASELINE:
        data["acceptance"] = {}
    return sc.validate(data, base.source)


def kv_problem(s: sc.Scenario) -> str | None:
    """Why the layout's KV pool cannot hold one longest request, or None when it can."""
    design = DesignShape.of(s.speculative)
    budget = memory_budget(build_pricer(s), design, pool_rule(s))
    longest = max_length(s.workload.input_len) + max_length(s.workload.output_len)
    if budget.request_bytes(longest) <= budget.kv_budget_bytes:
        return None
    weights = (budget.target_weight_bytes + budget.draft_weight_bytes) / 1e9
    return (f"{weights:.0f} GB of weights per GPU leave {budget.kv_budget_bytes / 1e9:.1f} GB of KV pool, "
            f"less than one {longest}-token request needs")


def has_experts(base: sc.Scenario) -> bool:
    """Whether the target has routed experts (expert parallelism applies)."""
    return base.specs.model.has_experts


def fitting_layouts(base: sc.Scenario, gpus: int, bounds: SearchBounds) -> tuple[list[Layout], dict[Layout, str]]:
    """(layouts that run the base scenario's design, {layout: why not} for the rest)."""
    kept, refused = [], {}
    spec = base.speculative.model_dump(exclude_none=True, exclude={"policy", "draft_tokens"})
    for layout in candidate_layouts(gpus, bounds, has_experts(base)):
        try:
            s = at_layout(base, layout, spec)
            problem = kv_problem(s)  # an engine default that leaves no memory refuses the layout too
        except ScenarioError as exc:
            refused[layout] = f"{exc.key}: {exc.reason}" if exc.key else exc.reason
            continue
        if problem:
            refused[layout] = problem
        else:
            kept.append(layout)
    return kept, refused
