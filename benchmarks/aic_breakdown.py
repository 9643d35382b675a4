"""aiconfigurator's breakdown of one decode step, op by op, by role: the peer's side of
benchmarks/ops_vs_aiconfigurator.py.

Its model's generation op list (aiconfigurator_core/sdk/models/*.py `generation_ops`) is
evaluated leaf by leaf through its compiled engine (`aiconfigurator_core.sdk.engine._evaluate_single_op`)
at the decode shape `InferenceSession.run_static(mode="static_gen")` prices; composite ops keep
their semantics as correction rows (`moe.shared_overlap` for an OverlapOp,
`attention.module_vs_ops` for a FallbackOp), so the roles sum to the step's own total.
"""
from __future__ import annotations

import logging
import warnings

import pandas as pd

from mtpsim import scenario as sc
from mtpsim.peer import MODELS, SYSTEMS

# aiconfigurator generation op name (without the generation_ prefix) -> role; matched exactly, then
# by the longest listed suffix (its models name ops <phase>_<what>: sdk/models/deepseek.py, llama.py)
AIC_ROLES = {
    "downscale_gemm": "gemm.qkv_a", "q_b_proj_gemm": "gemm.q_b", "bmm_pre": "bmm.w_uk", "bmm_post": "bmm.w_uv",
    "qkv_gemm": "gemm.qkv", "proj_gemm": "gemm.o_proj", "ffn1_gemm": "gemm.dense_ffn", "ffn2_gemm": "gemm.dense_ffn",
    "gate_ffn1_gemm": "gemm.dense_ffn", "router_gemm": "gemm.router", "shared_gate_up_gemm": "gemm.shared_experts",
    "shared_ffn2_gemm": "gemm.shared_experts", "attention": "attention", "moe": "moe",
    "logits_gemm": "embed_lm_head", "embedding": "embed_lm_head", "p2p": "other",
    "add_norm_1": "norms_small", "add_norm_2": "norms_small", "q_a_layernorm": "norms_small",
    "shared_act_gate": "norms_small", "act_gate": "norms_small", "tp_allreduce": "allreduce", "allreduce": "allreduce",
    # the newer models' op lists (sdk/models/gemma4.py, hybrid_moe.py, qwen35.py, deepseek_v4.py, nemotron_h.py,
    # kimi_k3.py, gpt.py, llama.py): norms, activations and gates, all-reduces, the dense and shared MLPs,
    # linear attention's projections and state update, DeepSeek-V4's hyper-connections
    "_norm": "norms_small", "_act": "norms_small", "act": "norms_small", "relu2": "norms_small",
    "gate_mul": "norms_small", "shared_merge": "norms_small", "attn_gate": "norms_small",
    "_ar": "allreduce", "ar_1": "allreduce", "ar_2": "allreduce",
    "shared_mlp_gate_up_gemm": "gemm.shared_experts", "shared_mlp_down_gemm": "gemm.shared_experts",
    "shared_up_gemm": "gemm.shared_experts", "shared_down_gemm": "gemm.shared_experts",
    "shared_expert_gate_gemm": "gemm.shared_experts",
    "dense_gate_up_gemm": "gemm.dense_ffn", "dense_down_gemm": "gemm.dense_ffn", "mlp_up_gemm": "gemm.dense_ffn",
    "mlp_down_gemm": "gemm.dense_ffn", "gdn_in_proj_gemm": "gemm.qkv", "gdn_in_proj_ba_gemm": "gemm.qkv",
    "attn_gate_gemm": "gemm.qkv", "gdn_out_proj_gemm": "gemm.o_proj", "gdn_conv1d": "attention",
    "gdn_recurrence": "attention", "mamba_conv1d": "attention", "mamba_ssm": "attention",
    "mhc_pre": "hyper_connections", "mhc_post": "hyper_connections", "rope_kvcache": "norms_small",
}


def aic_role(name: str, dispatches: bool) -> str:
    """The role of an aiconfigurator generation op. Its MoEDispatch ops are the tensor-parallel
    all-reduce (sdk/models/deepseek.py: 'TRT-LLM (narrow EP) and SGLang paths model their
    allreduce ... elsewhere': in generation_moe_pre/post_dispatch) unless the deployment moves
    tokens between EP ranks (`dispatches`: ep > 1 under DP attention; without DP attention every
    engine runs an all-reduce there, mtpsim/costs/layer.py), where they are dispatch / combine."""
    short = name.removeprefix("generation_")
    if "dispatch" in short:
        return "dispatch_combine" if dispatches else "allreduce"
    if short in AIC_ROLES:
        return AIC_ROLES[short]
    for suffix in sorted(AIC_ROLES, key=len, reverse=True):
        if short.endswith(suffix):
            return AIC_ROLES[suffix]
    return "other"


def aic_available() -> str | None:
    """None when aiconfigurator's API imports here, else why not (one line)."""
    try:
        import aiconfigurator.cli.api  # noqa: F401
        import aiconfigurator_core.sdk.engine  # noqa: F401
    except Exception as exc:  # any import failure: the script says so and stops
        return f"aiconfigurator is not importable here ({type(exc).__name__}: {exc}); pip install 'mtpsim[peer]'"
    return None


def aic_session(s: sc.Scenario, batch: int, context: int, nextn: int):
    """aiconfigurator's model and database for s's deployment, built by its own API
    (cli_estimate mode static_gen, one generation step after `context` tokens), and its step
    total per op (generation_latency_dict, ms). The session is caught at run_static."""
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore")
    import aiconfigurator.sdk.inference_session as session_module
    from aiconfigurator.cli.api import cli_estimate
    caught = {}
    original = session_module.InferenceSession.run_static

    def run_static(self, *args, **kwargs):
        caught["session"] = self
        return original(self, *args, **kwargs)

    p = s.parallel
    session_module.InferenceSession.run_static = run_static
    try:
        result = cli_estimate(MODELS.get(s.specs.model.name, s.specs.model.name), SYSTEMS[s.specs.hardware.name],
                              backend_name=s.specs.engine.name, mode="static_gen", tp_size=p.tp,
                              moe_tp_size=p.tp // p.ep, moe_ep_size=p.ep, batch_size=batch, isl=context, osl=2,
                              stride=1, nextn=nextn, nextn_accepted=float(nextn) if nextn else None,
                              kvcache_quant_mode=_aic_kv_mode(s))
    finally:
        session_module.InferenceSession.run_static = original
    sess = caught["session"]
    return sess._model, sess._database, dict(result.summary.get_generation_latency_dict()), result.raw


def _aic_kv_mode(s: sc.Scenario) -> str:
    """The KV-cache dtype mtpsim's scenario uses, in aiconfigurator's names (so both read the same rows)."""
    return {"bf16": "bfloat16", "fp8": "fp8"}.get(s.specs.model.dtypes.kv_cache, "bfloat16")


def aic_roles(s: sc.Scenario, batch: int, context: int, nextn: int = 0) -> tuple[pd.Series, float, float]:
    """(ms per step by role, aiconfigurator's own step total, the leaf-sum check) for s's deployment.
    Leaves are evaluated at aiconfigurator's decode shape: batch * (nextn + 1) tokens (its MTP
    verify width) after context + 1 cached."""
    from aiconfigurator_core.sdk.engine import _evaluate_single_op
    model, db, totals, _ = aic_session(s, batch, context, nextn)
    width = batch * (nextn + 1)

    def latency(op) -> float:
        return float(_evaluate_single_op(db, op, is_context=False, batch_size=width, s=context + 1))

    roles: dict[str, float] = {}
    check = 0.0
    for op in model.generation_ops:
        check += _fold(op, latency, roles, s.parallel.ep > 1 and s.parallel.attention_dp > 1)
    return pd.Series(roles), sum(totals.values()), check


def _fold(op, latency, roles: dict, dispatches: bool) -> float:
    """Add op's leaves to `roles` (ms); composites add a correction row so the roles sum to the
    composite's own time, which is returned."""
    group_a, group_b = getattr(op, "_group_a", None), getattr(op, "_group_b", None)
    primary, fallback = getattr(op, "_primary", None), getattr(op, "_fallback", None)
    if group_a is not None or group_b is not None:  # OverlapOp: max(sum a, sum b)
        a = sum(_fold(x, latency, roles, dispatches) for x in group_a or [])
        b = sum(_fold(x, latency, roles, dispatches) for x in group_b or [])
        roles["moe.shared_overlap"] = roles.get("moe.shared_overlap", 0.0) - min(a, b)
        return max(a, b)
    if primary is not None or fallback is not None:  # FallbackOp: the module table, else its ops
        total = latency(op)
        parts = sum(_fold(x, latency, roles, dispatches) for x in fallback or [])
        roles["attention.module_vs_ops"] = roles.get("attention.module_vs_ops", 0.0) + total - parts
        return total
    t = latency(op)
    role = aic_role(op._name, dispatches)
    roles[role] = roles.get(role, 0.0) + t
    return t
