"""NVIDIA aiconfigurator as a peer predictor: its own TPOT and tokens/s for a deployment, with
and without MTP (`mtpsim run --peer`, benchmarks/published.py and absolute.py print it beside
mtpsim's; mtpsim/peer_compare.py puts a scenario point to it).

Targets aiconfigurator==0.12.0 (with aiconfigurator-core==0.12.0; no torch), an optional
dependency: `pip install 'mtpsim[peer]'`, or a separate interpreter named by $AICONFIGURATOR_PYTHON.

How it is called: through aiconfigurator's Python API, ``aiconfigurator.cli.api.cli_estimate``
(the programmatic twin of ``aiconfigurator cli estimate``; no CLI output is parsed). If
aiconfigurator imports in the running interpreter the call is made in-process (a warning says
$AICONFIGURATOR_PYTHON, if set, is not read); otherwise
mtpsim/peer_worker.py, aiconfigurator's side, which imports nothing of mtpsim, is run by its path
as a worker (JSON on stdin/stdout) under the interpreter named by $AICONFIGURATOR_PYTHON. This file
asks: requests, the interpreter, the worker's answers checked, each question once a process.

What aiconfigurator assumes about MTP (read from its 0.12.0 source): a decode iteration costs the
target's generation ops scaled by (num_layers + nextn) / num_layers (the drafts cost `nextn` average
target layers) at a verify width of batch * (nextn + 1) tokens; progress per iteration is
1 + nextn_accepted, where nextn_accepted = average accepted *draft* tokens. Our accept length counts
the bonus token too, so nextn_accepted = accept_length - 1. Acceptance is one scalar, not a
per-depth profile.

    >>> estimate("deepseek-v3", "h200", "sglang", tp=8, moe_tp=8, moe_ep=1, batch=1, isl=1024,
    ...          osl=512, nextn=3, accept_length=2.88)["tpot_ms"]            # doctest: +SKIP
    >>> speedup("deepseek-v3", "h200", "sglang", 8, 8, 1, 32, 1024, 512, 3, 2.88)["speedup"]  # doctest: +SKIP
"""
from __future__ import annotations

import functools
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

from mtpsim import peer_worker
from mtpsim.peer_worker import MARK, READ
from mtpsim.peer_worker import answer_safely as _answer_safely  # peer's name: tests stand in for it here

PYTHON_ENV = "AICONFIGURATOR_PYTHON"
DEFAULT_PYTHON = None  # only $AICONFIGURATOR_PYTHON names another interpreter
# a worker call is an import (~1 s) and a few estimates (~1 s each); one that takes minutes hangs,
# and is not waited for again in this process (_run)
TIMEOUT_S = 120
CHECK_TIMEOUT_S = 60  # `import aiconfigurator.cli.api` under $AICONFIGURATOR_PYTHON (unavailable)
VERSION = "0.12.0"  # the aiconfigurator release this file reads (its API, its MTP model)

# mtpsim catalog names -> the Hugging Face ids whose config.json aiconfigurator-core 0.12.0 ships
# (aiconfigurator_core/model_configs), so nothing is downloaded: each the checkpoint the catalog
# entry's sources name (mtpsim/data/models/<name>.yaml), or one of the same shapes (llama-3.3-70b's
# config.json has Llama-3.1-70B's; aiconfigurator times shapes and the checkpoint's quantisation).
MODELS = {
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",
    "deepseek-r1": "deepseek-ai/DeepSeek-R1",
    "deepseek-v3.2": "deepseek-ai/DeepSeek-V3.2",
    "deepseek-v4-flash": "deepseek-ai/DeepSeek-V4-Flash",
    "deepseek-v4-pro": "deepseek-ai/DeepSeek-V4-Pro",
    "llama-3.1-8b": "meta-llama/Meta-Llama-3.1-8B",
    "llama-3.1-70b": "meta-llama/Meta-Llama-3.1-70B",
    "llama-3.3-70b": "meta-llama/Meta-Llama-3.1-70B",
    "meta-llama/Llama-3.1-8B": "meta-llama/Meta-Llama-3.1-8B",
    "meta-llama/Llama-3.1-8B-Instruct": "meta-llama/Meta-Llama-3.1-8B",
    "meta-llama/Meta-Llama-3.1-8B-Instruct": "meta-llama/Meta-Llama-3.1-8B",
    "qwen3-8b": "Qwen/Qwen3-8B",
    "qwen3-32b": "Qwen/Qwen3-32B",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B",
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
    "qwen3.5-397b-a17b": "Qwen/Qwen3.5-397B-A17B",
    "kimi-k2.5": "moonshotai/Kimi-K2.5",
    "mimo-7b": "XiaomiMiMo/MiMo-7B-Base",
    "mimo-v2-flash": "XiaomiMiMo/MiMo-V2-Flash",
    "gemma-4-26b-a4b": "google/gemma-4-26B-A4B",
    "gpt-oss-120b": "openai/gpt-oss-120b",
    "minimax-m2.5": "MiniMaxAI/MiniMax-M2.5",
}
SYSTEMS = {"a100-80g": "a100_sxm", "h200": "h200_sxm", "h200-sxm": "h200_sxm", "h100": "h100_sxm", "h100-sxm": "h100_sxm",
           "b200": "b200_sxm", "b200-sxm": "b200_sxm", "b300": "b300_sxm", "gb200": "gb200", "gb300": "gb300"}

# Qwen3-Next-80B-A3B has no aiconfigurator model class (Qwen3NextForCausalLM is not a supported
# architecture in 0.12.0) and no shipped config. proxy=True expresses it through the closest class
# aiconfigurator has, Qwen3.5-MoE (same hybrid Gated-DeltaNet / gated-attention, 3:1 layout), with
# Qwen3-Next's sizes (mtpsim/data/models/qwen3-next-80b-a3b.yaml). Its 512-expert top-10 MoE has no
# silicon rows, so the proxy runs in HYBRID database mode (SOL + empirical fill-in).
QWEN3_NEXT = ("qwen3-next-80b-a3b", "qwen/qwen3-next-80b-a3b", "qwen/qwen3-next-80b-a3b-instruct",
              "qwen/qwen3-next-80b-a3b-thinking")
# Extra keywords passed through to cli_estimate.
PASSTHROUGH = {"mode", "database_mode", "backend_version", "ctx_tokens", "pp_size", "attention_dp_size",
               "gemm_quant_mode", "kvcache_quant_mode", "fmha_quant_mode", "moe_quant_mode",
               "comm_quant_mode", "free_gpu_memory_fraction", "attention_backend", "transfer_policy"}


class NotExpressible(ValueError):
    """The case cannot be put to aiconfigurator (model, system, backend, shape or perf data missing)."""


class PeerError(RuntimeError):
    """aiconfigurator failed for another reason, or its interpreter could not be run."""


# ---------------------------------------------------------------- public API

def available() -> bool:
    """True when aiconfigurator can be imported, here or under $AICONFIGURATOR_PYTHON."""
    return not unavailable()


@functools.lru_cache(maxsize=1)
def unavailable() -> str:
    """'' when aiconfigurator can be imported, here or under $AICONFIGURATOR_PYTHON; else why not,
    in one line (what $AICONFIGURATOR_PYTHON names, where it is set, and what is wrong with it)."""
    if _importable_here():
        import aiconfigurator
        if _named_python():  # the user named another interpreter, which an in-process import passes over
            from mtpsim.errors import short, warn
            warn(f"${PYTHON_ENV}", "", f"not read: aiconfigurator imports in this interpreter ({short(sys.executable, 80)}), "
                 f"which answers (unset ${PYTHON_ENV}, or run mtpsim where aiconfigurator is not installed)")
        found = getattr(aiconfigurator, "__version__", "?")
        return "" if found == VERSION else f"aiconfigurator {found} is installed here, whose API and MTP model differ"
    python = _named_python()
    if not python:
        return f"aiconfigurator is not importable here and ${PYTHON_ENV} is not set"
    if os.sep not in python or not Path(python).exists():  # a bare name _named_python found on no $PATH
        here = f" ({python} in the current folder is not looked up: write ./{python})" if Path(python).exists() else ""
        missing = f"is no command on $PATH{here}" if os.sep not in python else "does not exist"
        return f"${PYTHON_ENV} names {python}, which {missing}"
    try:
        done = subprocess.run([python, "-c", "import aiconfigurator.cli.api, aiconfigurator; "
                               "print(getattr(aiconfigurator, '__version__', '?'))"], capture_output=True, text=True,
                              timeout=CHECK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"${PYTHON_ENV} ({python}) did not import aiconfigurator within {CHECK_TIMEOUT_S} s"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"${PYTHON_ENV} ({python}) cannot be run: {exc.strerror if isinstance(exc, OSError) else exc}"
    if done.returncode != 0:
        return f"${PYTHON_ENV} ({python}) cannot import aiconfigurator: {_last_line(done.stderr) or f'rc {done.returncode}'}"
    found = _last_line(done.stdout) or "?"
    return "" if found == VERSION else f"${PYTHON_ENV} ({python}) has aiconfigurator {found[:40]}, whose API and MTP model differ"


def estimate(model: str, system: str, backend: str, tp: int, moe_tp: int | None, moe_ep: int | None,
             batch: int, isl: int, osl: int, nextn: int = 0, accept_length: float | None = None,
             *, proxy: bool = False, **options) -> dict:
    """aiconfigurator's own prediction for one point (agg / in-flight batching mode by default).

    model: HF id shipped with aiconfigurator, a local folder with config.json, or an mtpsim name
    (deepseek-v3, llama-3.1-8b; qwen3-next-80b-a3b only with proxy=True). system: h200_sxm, h100_sxm,
    b200_sxm (or h200 / h100-sxm / b200). backend: sglang, trtllm, vllm. batch: concurrent requests.
    nextn: draft tokens per iteration; accept_length: tokens emitted per iteration including the
    bonus token (required when nextn > 0). options: mode ("agg", "static", "static_gen", ...),
    database_mode ("SILICON" default, "HYBRID", "EMPIRICAL", "SOL"), quant modes, ... (PASSTHROUGH).

    Returns tpot_ms, tps_per_user, tps (all output tokens/s of the deployment), ttft_ms,
    tps_per_gpu, request_latency_ms, concurrency, num_gpus, backend_version, nextn_accepted,
    warnings, ... Raises NotExpressible when aiconfigurator cannot express the case.
    """
    return _run([_request(model, system, backend, tp, moe_tp, moe_ep, batch, isl, osl, nextn,
                          accept_length, proxy, options)])[0]


def speedup(model: str, system: str, backend: str, tp: int, moe_tp: int | None, moe_ep: int | None,
            batch: int, isl: int, osl: int, nextn: int, accept_length: float, *, proxy: bool = False,
            base_batch: int | None = None, **options) -> dict:
    """estimate with nextn over estimate without, as mtpsim defines them; the one without at
    `base_batch` (default `batch`: a running cap on speculative decoding alone holds the two apart).

    speedup = tps ratio, per_user_speedup = tps_per_user ratio, tpot_ratio = base TPOT / MTP TPOT;
    "mtp" and "base" hold the two estimates."""
    if not nextn:
        raise ValueError("speedup needs nextn > 0")
    base_batch = batch if base_batch is None else base_batch
    base, mtp = _run([_request(model, system, backend, tp, moe_tp, moe_ep, base_batch, isl, osl, 0, None, proxy,
                               options),
                      _request(model, system, backend, tp, moe_tp, moe_ep, batch, isl, osl, nextn,
                               accept_length, proxy, options)])
    return {"speedup": _ratio(mtp["tps"], base["tps"]),
            "per_user_speedup": _ratio(mtp["tps_per_user"], base["tps_per_user"]),
            "tpot_ratio": _ratio(base["tpot_ms"], mtp["tpot_ms"]), "mtp": mtp, "base": base}


# ---------------------------------------------------------------- request building (no aiconfigurator here)

def _request(model, system, backend, tp, moe_tp, moe_ep, batch, isl, osl, nextn, accept_length, proxy, options):
    unknown = set(options) - PASSTHROUGH
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)}; allowed: {sorted(PASSTHROUGH)}")
    nextn = int(nextn or 0)
    if nextn < 0:
        raise ValueError(f"nextn must be >= 0, got {nextn}")
    accepted = None
    if nextn:
        if accept_length is None:
            raise NotExpressible("aiconfigurator has no built-in acceptance: give accept_length with nextn > 0")
        if not (math.isfinite(accept_length) and 1.0 <= accept_length <= nextn + 1):
            raise ValueError(f"accept_length {accept_length} outside [1, nextn + 1 = {nextn + 1}]")
        accepted = float(accept_length) - 1.0
    backend = backend.lower()
    if backend not in ("sglang", "trtllm", "vllm"):
        raise NotExpressible(f"backend {backend!r}: aiconfigurator knows sglang, trtllm, vllm")
    qwen3_next = model.lower() in QWEN3_NEXT
    if qwen3_next and not proxy:
        raise NotExpressible(
            f"{model}: aiconfigurator 0.12.0 has no Qwen3-Next model (Qwen3NextForCausalLM is not a supported "
            "architecture and no config ships); pass proxy=True to use its Qwen3.5-MoE class with Qwen3-Next "
            "sizes in HYBRID database mode")
    if qwen3_next:
        options = {"database_mode": "HYBRID", **options}
    return {"model": "@qwen3-next-proxy" if qwen3_next else MODELS.get(model, model),
            "system": SYSTEMS.get(system.lower(), system.lower()), "backend": backend, "tp": int(tp),
            "moe_tp": None if moe_tp is None else int(moe_tp), "moe_ep": None if moe_ep is None else int(moe_ep),
            "batch": int(batch), "isl": int(isl), "osl": int(osl), "nextn": nextn, "nextn_accepted": accepted,
            "accept_length": accept_length if nextn else None, "options": dict(options)}


def _ratio(a, b):
    return a / b if b else math.nan


def _importable_here() -> bool:
    try:
        import aiconfigurator.cli.api  # noqa: F401
    except Exception:
        return False
    return True


def _named_python() -> str | None:
    """What $AICONFIGURATOR_PYTHON names (None: unset), as a shell would run it: `~` expanded, and a
    bare command name (`python3`) looked up on $PATH, never in the current folder, so that the
    check and the run find the same file."""
    python = os.environ.get(PYTHON_ENV, DEFAULT_PYTHON)
    if not python:
        return python
    python = os.path.expanduser(python)
    return (shutil.which(python) or python) if os.sep not in python else python


def _external_python() -> str | None:
    """$AICONFIGURATOR_PYTHON where it names a file that exists (a bare name: found on $PATH)."""
    python = _named_python()
    return python if python and os.sep in python and Path(python).exists() else None


def _last_line(text: str) -> str:
    """The last non-blank line of a process's stderr (a traceback's is its exception): one line for a note."""
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")


_hung: dict[str, str] = {}  # interpreter -> its worker call that timed out: later calls to it are not waited for


# answers given in this process, by where they came from and the request: a sweep's points share
# their baselines' questions (speedup asks each point's plain estimate too), and one answer serves
_ANSWERED: dict[str, dict] = {}


def _run(requests: list[dict]) -> list[dict]:
    """Answer requests in-process or in one worker subprocess (each question once per process:
    _ANSWERED); re-raise errors as our exceptions."""
    here = _importable_here()
    where = "in-process" if here else str(_external_python())
    keys = [f"{where}\n{json.dumps(r, sort_keys=True)}" for r in requests]
    todo = {k: r for k, r in zip(keys, requests) if k not in _ANSWERED}
    if todo:
        fresh = [_answer_safely(r) for r in todo.values()] if here else _ask_worker(list(todo.values()))
        _ANSWERED.update(zip(todo, fresh))
    answers = [_ANSWERED[k] for k in keys]
    for answer in answers:
        if "error" in answer:
            kind = NotExpressible if answer["error"] == "not_expressible" else PeerError
            raise kind(answer["message"])
    return answers


def _ask_worker(requests: list[dict]) -> list[dict]:
    """The answers of this file run as a worker under $AICONFIGURATOR_PYTHON, one per request, or
    PeerError in one line: the interpreter missing or not runnable, its worker failing, timing out
    (then not asked again in this process), or answering other than the worker does."""
    python = _external_python()
    if not python:
        raise PeerError(f"aiconfigurator is not importable and ${PYTHON_ENV} ({_named_python()})"
                        " does not exist; install aiconfigurator==0.12.0 in a separate venv")
    if python in _hung:
        raise PeerError(f"not asked: {_hung[python]}")
    try:
        done = subprocess.run([python, str(Path(peer_worker.__file__).resolve()), "--worker"], input=json.dumps(requests),
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        _hung[python] = f"the aiconfigurator worker under ${PYTHON_ENV} ({python}) timed out after {TIMEOUT_S} s"
        raise PeerError(_hung[python]) from exc
    except OSError as exc:
        raise PeerError(f"${PYTHON_ENV} ({python}) cannot be run: {exc.strerror}") from exc
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    if done.returncode != 0 or not lines:
        raise PeerError(f"aiconfigurator worker under ${PYTHON_ENV} ({python}) failed (rc {done.returncode}): "
                        f"{_last_line(done.stderr) or 'no answer'}")
    try:
        answers = json.loads(lines[-1][len(MARK):])
    except ValueError:
        answers = None
    if not (isinstance(answers, list) and len(answers) == len(requests)
            and all(isinstance(a, dict) and ({"error", "message"} <= set(a) or set(READ) <= set(a)) for a in answers)):
        raise PeerError(f"aiconfigurator worker under ${PYTHON_ENV} ({python}) did not answer one result per request")
    return answers


