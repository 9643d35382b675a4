"""Whether the model shards onto a scenario's layout (checks.py runs these with its other checks
against the specs): query and KV heads, dense and expert widths and the experts divisible as
SGLang splits them, a replica wider than a node on whole nodes of a hardware that describes its
network, and a disaggregated deployment's pools each such a layout, within its GPUs, with a link
the hardware describes. Each is a ScenarioError naming the key to change.
"""
from __future__ import annotations

from mtpsim.errors import ScenarioError
from mtpsim.layout_schema import Parallel
from mtpsim.schema import Scenario


def check_parallelism(s: Scenario, where: str) -> None:
    """Shard the model as SGLang would or say why it cannot: query heads split over the attention
    GPUs (tp, or tp / attention_dp under DP attention), KV heads split over them or replicated,
    dense FFN widths over tp, experts over ep, each expert's width over tp / ep
    (python/sglang/srt/configs/model_config.py get_num_kv_heads, layers/linear.py divide(),
    layers/moe/ep_moe, layers/dp_attention.py attn_tp_size = tp_size // dp_size)."""
    p = s.parallel
    tp, ep, heads_tp = p.tp, p.ep, p.attention_tp
    where_heads = "parallel.tp" if p.attention_dp == 1 else "parallel.attention_dp"
    split = f"tp {tp}" if p.attention_dp == 1 else f"tp / attention_dp = {heads_tp}"
    models = [m for m in (s.specs.model, s.specs.assistant, s.specs.draft) if m is not None]
    for m in models:
        for name, att in m.attention_kinds.items():
            what = f"model {m.name!r} attention {name!r}"
            if att.num_heads % heads_tp:
                relation = "fewer than" if heads_tp > att.num_heads else "not divisible by"
                raise ScenarioError(where, where_heads, f"{what} has {att.num_heads} query heads, {relation} {split}")
            if att.kind == "compressed" and att.compressed.o_groups % heads_tp:  # reference: o_groups // world_size
                raise ScenarioError(where, where_heads, f"{what} has {att.compressed.o_groups} output groups "
                                    f"(compressed.o_groups), not divisible by {split}")
            kv = att.num_kv_heads if att.kind != "mla" else None
            if kv and (heads_tp % kv if heads_tp >= kv else kv % heads_tp):
                raise ScenarioError(where, where_heads, f"{what} has {kv} KV heads: {split} must divide them "
                                    "or be a multiple of them")
        for name, ffn in m.ffn_kinds.items():
            what = f"model {m.name!r} ffn {name!r}"
            replicated = p.attention_dp > 1 and ep == tp  # wide EP: dense layers run per GPU (costs/dp_attention.py)
            if ffn.kind == "dense" and not replicated and ffn.intermediate_size % tp:
                raise ScenarioError(where, "parallel.tp", f"{what} is {ffn.intermediate_size} wide, not divisible by tp {tp}")
            if ffn.kind == "moe":
                if ffn.num_experts % ep:
                    raise ScenarioError(where, "parallel.ep", f"{what} has {ffn.num_experts} experts, not divisible by ep {ep}")
                if ffn.expert_intermediate_size % (tp // ep):
                    raise ScenarioError(where, "parallel.tp", f"{what}'s experts are {ffn.expert_intermediate_size} wide, "
                                        f"not divisible by tp / ep = {tp // ep}")
    if ep > 1 and not any(f.kind == "moe" for f in s.specs.model.ffn_kinds.values()):
        raise ScenarioError(where, "parallel.ep", f"model {s.specs.model.name!r} has no experts to split")
    _check_nodes(s, where)


def _check_nodes(s: Scenario, where: str) -> None:
    """A node holds at most the hardware's NVLink domain; a replica wider than a node spans whole
    nodes (SGLang --nnodes: tp_size split evenly over them) and needs the hardware's inter-node
    network to price its collectives."""
    p, hw = s.parallel, s.specs.hardware
    if p.gpus_per_node is not None and p.gpus_per_node > hw.gpus_per_node:
        raise ScenarioError(where, "parallel.gpus_per_node", f"{p.gpus_per_node} GPUs a node is more than hardware "
                            f"{hw.name!r} joins in one NVLink domain ({hw.gpus_per_node}, its gpus_per_node): the "
                            "collectives would ride NVLink between GPUs it does not link; a larger domain is the "
                            "hardware's gpus_per_node")
    per_node = p.gpus_per_node or hw.gpus_per_node
    if p.tp <= per_node:
        return
    if p.tp % per_node:
        raise ScenarioError(where, "parallel.tp", f"tp {p.tp} spans nodes of {per_node} GPUs but is not a multiple of them")
    if hw.internode_bandwidth_bytes_per_s is None or hw.internode_latency_s is None:
        raise ScenarioError(where, "parallel.tp", f"tp {p.tp} spans nodes of {per_node} GPUs and hardware {hw.name!r} "
                            "describes no inter-node network (internode_bandwidth_bytes_per_s, internode_latency_s)")


def check_pools(s: Scenario, where: str) -> None:
    """A disaggregated deployment: the layout given per pool (not as `parallel`), the pools within
    the deployment's GPUs, each pool's layout one the model shards into, and a link the hardware
    entry describes (mtpsim/pools.py)."""
    from mtpsim.pools import ROLES, pool_scenario, resolve_link
    d = s.disaggregation
    if s.parallel != Parallel():
        raise ScenarioError(where, "parallel", "with disaggregation the layout is given per pool "
                            "(disaggregation.prefill / disaggregation.decode), not as parallel")
    if d.gpus is not None and d.prefill.gpus + d.decode.gpus > d.gpus:
        raise ScenarioError(where, "disaggregation.gpus", f"the prefill pool's {d.prefill.gpus} GPUs and the decode "
                            f"pool's {d.decode.gpus} exceed the deployment's {d.gpus}")
    for role in ROLES:
        try:
            check_parallelism(pool_scenario(s, role), where)
        except ScenarioError as exc:  # name the pool's own key: parallel.tp -> disaggregation.decode.tp
            key = f"disaggregation.{role}.{exc.key.removeprefix('parallel.')}"
            raise ScenarioError(where, key, f"{role} pool: {exc.reason}") from None
    resolve_link(s, where)
