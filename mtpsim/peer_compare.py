"""A scenario point put to aiconfigurator (mtpsim/peer.py): the question it can be asked (`question`),
or why none, and its answer (`ask`, `ask_row` for a run's summary row). The tables that set the
answers beside mtpsim's (`mtpsim run`, `search` and `recommend --peer`) are peer_tables.py's;
benchmarks/published.py and absolute.py ask through `ask_row` too.

aiconfigurator 0.12.0 estimates one deployment at a fixed batch (`cli estimate`, its aggregated
mode): a model whose config.json it ships, as its checkpoint is quantised, on a GPU system it has
tables for, under SGLang, TensorRT-LLM or vLLM, with MTP as `nextn` drafts priced as the target's
own layers. A point it cannot be given that way gets the reason instead of a number (`ask`), so a
table never sets two different questions side by side.
"""
from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass

from mtpsim import peer
from mtpsim import scenario as sc
from mtpsim.designs import BASELINE
from mtpsim.schema import mean_length

# mtpsim KV dtypes -> aiconfigurator's KVCacheQuantMode names (aiconfigurator_core/sdk/common.py)
KV_MODES = {"bf16": "bfloat16", "fp8": "fp8"}
# designs aiconfigurator prices (its `nextn`): the model's own MTP layers drafting a top-1 chain,
# reused (nextn) or one per step (multi_layer); it prices each draft as an average target layer
MTP_DESIGNS = ("nextn", "multi_layer")


def require() -> None:
    """`--peer`'s precondition, checked before anything runs: aiconfigurator imports here or under
    $AICONFIGURATOR_PYTHON, else one line naming --peer and what is wrong (peer.unavailable)."""
    if not peer.available():
        from mtpsim.errors import ScenarioError
        why = peer.unavailable()
        raise ScenarioError("--peer", "", f"needs aiconfigurator {peer.VERSION}{f' ({why})' if why else ''}: pip install "
                            f"'mtpsim[peer]', or set ${peer.PYTHON_ENV} to a Python that has it")


@dataclass(frozen=True)
class Question:
    """What aiconfigurator is asked for one point: estimate's positional arguments, per replica, and
    its keyword options; `replicas` multiplies its tokens/s back to the deployment's, `users` is
    the batch it should hold (a replica's running requests), `base_batch` estimate's batch for the
    point's plain baseline (args[6] unless a running cap held the two to different batches);
    `caveat`: where its answer is to another design or batch than the point's load."""

    args: tuple
    options: dict
    nextn: int
    replicas: int
    users: int
    caveat: str = ""
    base_batch: int | None = None
    load_key: str = "workload.concurrency"  # the key that sets `users`: a batch load's are its requests


def question(s: sc.Scenario, cap: int | None = None, base_cap: int | None = None) -> Question:
    """The point as aiconfigurator's estimate takes it, or peer.NotExpressible naming the key that
    it cannot take and why. `cap`: the running-request cap the run held each replica to (its
    summary row's max_running; None: none held it): users past it wait, so aiconfigurator is asked
    the batch that ran; `base_cap`: the cap its `none` baseline ran under (SGLang caps speculative
    decoding alone), the batch of the estimate its speedup is over."""
    _check_load(s)
    _check_model(s)
    _check_gpu(s)
    if s.specs.engine.name not in ("sglang", "trtllm", "vllm"):
        raise peer.NotExpressible(f"engine.kind: {s.specs.engine.name}: aiconfigurator knows sglang, trtllm and vllm")
    w, p, specs = s.workload, s.parallel, s.specs
    if mean_length(w.output_len) < 2:
        raise peer.NotExpressible(f"workload.output_len: requests of {mean_length(w.output_len)} output token decode "
                                  "nothing after their prefill: no TPOT to compare")
    nextn, caveat = _nextn(s)
    key, total, users, running, base_running = _batches(s, cap, base_cap if nextn else cap)
    notes = [caveat]
    if w.arrival == "batch":  # the tables' conc column shows workload.concurrency, which a batch load does not read
        notes.append(f"workload.num_requests: a batch load's {total} requests, all sent at once, are the batch "
                     "aiconfigurator is asked, not the conc column's concurrency")
    if running < users:
        notes.append(f"engine.max_running_requests: the running cap held a replica's {users} users to {running} at "
                     "once, the batch aiconfigurator is asked")
    options = {"kvcache_quant_mode": KV_MODES[specs.model.dtypes.kv_cache]}
    if p.attention_dp > 1:
        options["attention_dp_size"] = p.attention_dp
    args = (specs.model.name, specs.hardware.name, specs.engine.name, p.attention_tp, p.tp // p.ep, p.ep,
            running // p.attention_dp, int(mean_length(w.input_len)), int(mean_length(w.output_len)))
    return Question(args, options, nextn, p.dp, running, "; ".join(n for n in notes if n),
                    base_running // p.attention_dp, key)


def _check_load(s: sc.Scenario) -> None:
    """A load aiconfigurator estimates: aggregated serving at a fixed batch."""
    w = s.workload
    if s.disaggregation is not None:
        raise peer.NotExpressible("disaggregation: aiconfigurator's estimate here is aggregated serving (run each "
                                  "pool as a scenario of its own to compare)")
    if w.arrival not in ("closed", "batch"):
        raise peer.NotExpressible(f"workload.arrival: {w.arrival}: aiconfigurator estimates a fixed batch (a closed "
                                  "load's concurrency, or a batch load's requests)")


def _check_model(s: sc.Scenario) -> None:
    """A model aiconfigurator reads as the point has it: a mapped built-in entry, unchanged but for
    the KV dtype, which it takes in one of its modes."""
    model = s.specs.model.name
    if model not in _mapped("models"):
        raise peer.NotExpressible(
            f"model: {model}: mtpsim has no built-in entry of that name to check its shapes against the checkpoint "
            f"aiconfigurator reads ({peer.MODELS[model]})" if model in peer.MODELS else
            f"model: {model}: no config of it ships with aiconfigurator {peer.VERSION} (mapped: "
            f"{', '.join(_mapped('models'))})")
    changed = _changed_from_catalog(s)
    if changed:
        raise peer.NotExpressible(f"model: {', '.join(changed)} {_differ(changed)} from the built-in {model}'s: "
                                  "aiconfigurator reads the published checkpoint's shapes and quantisation")
    kv = s.specs.model.dtypes.kv_cache
    if kv not in KV_MODES:
        raise peer.NotExpressible(f"model.dtypes.kv_cache: {kv}: aiconfigurator's KV modes are {', '.join(KV_MODES)}")


def _check_gpu(s: sc.Scenario) -> None:
    """A GPU aiconfigurator has a system of: a mapped built-in entry, unchanged but for mtpsim's
    own pricing keys, in nodes of its size."""
    gpu, hw = s.specs.hardware.name, s.specs.hardware
    if gpu not in _mapped("hardware"):
        raise peer.NotExpressible(
            f"hardware: {gpu}: mtpsim has no built-in entry of that name to check it against aiconfigurator's system "
            f"({peer.SYSTEMS[gpu]})" if gpu in peer.SYSTEMS else
            f"hardware: {gpu}: aiconfigurator has no tables for it (mapped: {', '.join(_mapped('hardware'))})")
    changed = _changed_hardware(s)
    if changed:
        raise peer.NotExpressible(f"hardware: {', '.join(changed)} {_differ(changed)} from the built-in {gpu}'s: "
                                  f"aiconfigurator times its own {peer.SYSTEMS[gpu]} system")
    if s.parallel.gpus_per_node is not None and s.parallel.gpus_per_node != hw.gpus_per_node:
        raise peer.NotExpressible(f"parallel.gpus_per_node: {s.parallel.gpus_per_node}: aiconfigurator's "
                                  f"{peer.SYSTEMS[gpu]} nodes are the hardware's {hw.gpus_per_node} GPUs")


def _differ(keys: list[str]) -> str:
    return "differ" if len(keys) > 1 else "differs"


def _batches(s: sc.Scenario, cap: int | None, base_cap: int | None) -> tuple[str, int, int, int, int]:
    """(the key that sets the load, its requests at once, a replica's users, the batch that ran
    there under `cap`, its baseline's under `base_cap`): aiconfigurator's batch is one attention
    group's, in one replica, of the requests that run at once: a closed load's users, or a batch
    load's requests (all sent at t=0: run reads no concurrency of it); NotExpressible where they do
    not split over the replicas and attention groups."""
    w, p = s.workload, s.parallel
    key, total = ("workload.num_requests", w.num_requests) if w.arrival == "batch" else \
        ("workload.concurrency", w.concurrency)
    users = total // p.dp
    running, base_running = (users if c is None else min(users, c) for c in (cap, base_cap))
    if total % p.dp or running % p.attention_dp or base_running % p.attention_dp:
        held = f" (the running cap lets {min(running, base_running)} of them run a replica at once)" \
            if min(running, base_running) < users else ""
        raise peer.NotExpressible(f"{key}: {total} {'requests sent at once' if w.arrival == 'batch' else 'users'} do "
                                  f"not split evenly over {p.dp} replica(s) x attention_dp {p.attention_dp}{held}")
    return key, total, users, running, base_running


def _nextn(s: sc.Scenario) -> tuple[int, str]:
    """The draft tokens aiconfigurator prices for the point (0 without speculation), and a caveat
    where it prices another draft than the point's."""
    spec = s.speculative
    if spec.design == BASELINE:
        return 0, ""
    if spec.design not in MTP_DESIGNS:
        raise peer.NotExpressible(f"speculative.design: {spec.design}: aiconfigurator drafts with MTP layers only "
                                  f"(mtpsim's {' and '.join(MTP_DESIGNS)})")
    if spec.topk > 1:
        raise peer.NotExpressible(f"speculative.topk: {spec.topk}: aiconfigurator prices chains (top-1) only")
    if spec.policy is not None:
        raise peer.NotExpressible("speculative.policy: aiconfigurator prices a fixed draft length")
    if s.acceptance.kept_length is not None:
        raise peer.NotExpressible("acceptance.kept_length: aiconfigurator prices every request drafting and verifying "
                                  "its nextn drafts (a fixed width), not the widths a rule keeps")
    caveat = "" if spec.draft is None else (
        "speculative.draft: aiconfigurator has no draft models: it prices each draft as an average target "
        "layer, not as the draft model's pass")
    return spec.steps, caveat


# a model's sections aiconfigurator has no use for: it prices every draft as an average target
# layer, whatever the MTP layers, assistant or block drafter the scenario gives the target
DRAFT_SECTIONS = {"mtp", "assistant", "block_draft"}


@functools.cache
def _mapped(kind: str) -> list[str]:
    """The names question asks about: peer.MODELS' (kind `models`) or SYSTEMS' (`hardware`) that are
    built-in catalog entries, what a point's model (or GPU) is compared with (deepseek-r1, h100 and
    the Hugging Face ids are there for peer.estimate's callers, and a model or hardware file may
    take their names). The built-in catalog does not change in a process: read once."""
    from mtpsim.catalog import CATALOG_DIR
    names = peer.MODELS if kind == "models" else peer.SYSTEMS
    return sorted(k for k in names if "/" not in k and (CATALOG_DIR / kind / f"{k}.yaml").is_file())


# hardware keys of mtpsim's own pricing (its roofline's knobs, its profiles) or of search's cost and
# power columns: the GPU aiconfigurator times is the same whatever they say
PRICING_KEYS = {"name", "launch_overhead_s", "graph_launch_overhead_s", "efficiency_flops", "efficiency_bandwidth",
                "profiles", "latency_floors", "usd_per_gpu_hour", "board_power_w"}


def _changed_hardware(s: sc.Scenario) -> list[str]:
    """The keys of the point's GPU that differ from the built-in entry of its name (a `{from: h200,
    memory_bandwidth_bytes_per_s: ...}` override, or a user catalog's h200), its pricing keys aside."""
    from mtpsim.hardware_spec import HardwareSpec
    return _differing(s.specs.hardware, _built_in("hardware", s.specs.hardware.name, HardwareSpec), PRICING_KEYS)


def _changed_from_catalog(s: sc.Scenario) -> list[str]:
    """The keys of the point's model that differ from the built-in catalog entry of its name (the
    one MODELS maps: a user catalog's or file's model of the same name is compared with it too),
    the KV dtype and the draft sections aside (aiconfigurator takes the one as an option and prices
    no draft of its own): an override it cannot be told of."""
    from mtpsim.specs import ModelSpec
    without_kv = {"dtypes": {"kv_cache"}}  # model_dump's nested exclude
    changed = _differing(s.specs.model, _built_in("models", s.specs.model.name, ModelSpec), {*DRAFT_SECTIONS},
                         without_kv)
    return [k if k != "dtypes" else "model.dtypes" for k in changed]


def _built_in(kind: str, name: str, cls):
    """The built-in catalog's entry `name` of `kind`, whatever a user catalog holds of that name."""
    from mtpsim.catalog import CATALOG_DIR, spec_file
    return spec_file(kind, str(CATALOG_DIR / kind / f"{name}.yaml"), cls, "peer")


def _differing(mine, theirs, exclude: set[str], nested: dict | None = None) -> list[str]:
    """The top-level keys in which two specs' dumps differ, `exclude` (and `nested`'s keys within
    their sections) left out."""
    leave_out = {**dict.fromkeys(exclude, True), **(nested or {})}
    a, b = (spec.model_dump(exclude=leave_out) for spec in (mine, theirs))
    return [k for k in a if a[k] != b.get(k)]


def ask(s: sc.Scenario, accept_length: float, cap: int | None = None, base_cap: int | None = None) -> dict:
    """aiconfigurator's answer for point `s` (with `accept_length`, the accept length mtpsim ran, for
    its MTP; `cap`, `base_cap`: question's, the running caps the run held it and its baseline to):
    aic_tpot_ms, aic_tps (the deployment's: every replica), aic_tps_per_user, aic_speedup and
    aic_per_user_speedup over its own estimate without MTP (1 for a plain point), aic_version (its tables' engine
    release), and `note`: '' or what to know about the answer, or why there is none (the numbers
    then NaN)."""
    nan = float("nan")
    blank = {"aic_tpot_ms": nan, "aic_tps": nan, "aic_tps_per_user": nan, "aic_speedup": nan,
             "aic_per_user_speedup": nan, "aic_version": ""}
    try:
        q = question(s, cap, base_cap)
        if q.nextn:
            if not math.isfinite(accept_length):
                raise peer.NotExpressible("accept_length: the run accepted no drafts to give aiconfigurator (no "
                                          "request decoded past its first token)")
            al = min(max(accept_length, 1.0), q.nextn + 1.0)
            got = peer.speedup(*q.args, q.nextn, al, base_batch=q.base_batch, **q.options)
            est, gain, user_gain = got["mtp"], got["speedup"], got["per_user_speedup"]
        else:  # its own baseline, as mtpsim's `none` rows are theirs
            est, gain, user_gain = peer.estimate(*q.args, **q.options), 1.0, 1.0
    except (peer.NotExpressible, peer.PeerError, ValueError) as exc:
        return {**blank, "note": str(exc)}
    held, users = est["concurrency"] * q.replicas, q.users * q.replicas
    notes = [q.caveat]
    if math.isfinite(held) and held < users:
        notes.append(f"{q.load_key}: aiconfigurator holds {held:g} of the {users} users (its KV estimate)")
    return {"aic_tpot_ms": est["tpot_ms"], "aic_tps": est["tps"] * q.replicas, "aic_tps_per_user": est["tps_per_user"],
            "aic_speedup": gain, "aic_per_user_speedup": user_gain,
            "aic_version": f"{est['backend']} {est['backend_version']}",
            "note": "; ".join(n for n in notes if n)}


NO_BASELINE_ROW = object()  # ask_row's base_cap when no `none` row of the point's key was run beside it


def ask_row(row: dict, s: sc.Scenario, base_cap=NO_BASELINE_ROW) -> dict:
    """`ask` for the point of summary row `row`: at the batch its running cap (max_running) let run,
    with mtpsim's accept length, its speedup over the batch `base_cap` lets its baseline run (its
    `none` row's cap; without that row, the point's own cap where the scenario sets one, else none:
    an engine's own cap on speculative decoding alone, as SGLang's, does not hold its baseline)."""
    if base_cap is NO_BASELINE_ROW:
        base_cap = cap_of(row) if s.engine.max_running_requests is not None else None
    return ask(s, row["accept_length"], cap_of(row), base_cap)


def cap_of(row: dict) -> int | None:
    """The running-request cap a summary (or frontier, or grid) row ran under, where it has one."""
    cap = row.get("max_running")
    return int(cap) if isinstance(cap, numbers.Real) and not isinstance(cap, bool) and math.isfinite(cap) and cap > 0 \
        else None  # numpy's ints too: a DataFrame's row may hold them
