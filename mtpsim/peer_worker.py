"""aiconfigurator's side of mtpsim/peer.py: one request answered through its Python API
(`aiconfigurator.cli.api.cli_estimate`), in-process (`answer_safely`) or as a worker run by this
file's path (``python peer_worker.py --worker``, JSON on stdin, the answers on one marked stdout
line) under the interpreter $AICONFIGURATOR_PYTHON names. So it imports nothing of mtpsim: that
interpreter need not have it. Everything aiconfigurator raises, or a result of another shape, is
an answer {"error": kind, "message": one line}, never an exception.
"""
from __future__ import annotations

import functools
import json
import math
import sys
import tempfile
from pathlib import Path

# peer.py's qwen3-next proxy (peer.QWEN3_NEXT): aiconfigurator's Qwen3.5-MoE class with Qwen3-Next's sizes
_PROXY_BASE = "Qwen--Qwen3.5-35B-A3B_config.json"
_PROXY_TEXT = {"num_hidden_layers": 48, "hidden_size": 2048, "num_attention_heads": 16,
               "num_key_value_heads": 2, "head_dim": 256, "num_experts": 512, "num_experts_per_tok": 10,
               "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
               "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
               "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "full_attention_interval": 4,
               "vocab_size": 151936, "mtp_num_hidden_layers": 1,
               "layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 12}

MARK = "@@aiconfigurator_peer@@ "
READ = ("tpot_ms", "tps", "tps_per_user", "concurrency", "backend", "backend_version")  # what an answer is read for


def _answer(req: dict) -> dict:
    """One request -> result dict, or {"error": kind, "message": ...}. Runs where aiconfigurator imports."""
    import logging

    logging.getLogger("aiconfigurator").setLevel(logging.ERROR)
    logging.getLogger("aiconfigurator_core").setLevel(logging.ERROR)
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from aiconfigurator.cli.api import cli_estimate

    options = dict(req["options"])
    model = _proxy_folder() if req["model"] == "@qwen3-next-proxy" else req["model"]
    where = (f"{req['model']} on {req['system']}/{req['backend']} tp{req['tp']} moe_tp{req['moe_tp']} "
             f"moe_ep{req['moe_ep']} batch {req['batch']} nextn {req['nextn']}")
    missing = _missing_model(model)
    if missing:
        return {"error": "not_expressible", "message": f"{where}: {missing}"}
    try:
        result = cli_estimate(model, req["system"], backend_name=req["backend"], tp_size=req["tp"],
                              moe_tp_size=req["moe_tp"], moe_ep_size=req["moe_ep"], batch_size=req["batch"],
                              isl=req["isl"], osl=req["osl"], nextn=req["nextn"],
                              nextn_accepted=req["nextn_accepted"], **options)
    except (Exception, SystemExit) as exc:  # aiconfigurator raises many types (and may exit); sort them into ours
        return {"error": _kind(exc), "message": f"{where}: {type(exc).__name__}: {_one_line(exc)}"}
    raw = result.raw
    tpot, tps = float(result.tpot), float(raw.get("tokens/s", math.nan))
    if not (math.isfinite(tpot) and tpot > 0 and math.isfinite(tps) and tps > 0):
        return {"error": "error", "message": f"{where}: aiconfigurator answered a TPOT of {tpot:g} ms and {tps:g} "
                                             "tokens/s: no estimate"}
    import aiconfigurator

    return {"tpot_ms": tpot, "tps_per_user": float(raw.get("tokens/s/user", math.nan)),
            "tps": tps, "ttft_ms": float(result.ttft),
            "tps_per_gpu": float(raw.get("tokens/s/gpu", math.nan)),
            "request_latency_ms": float(raw.get("request_latency", math.nan)),
            "concurrency": float(raw.get("concurrency", math.nan)), "num_gpus": int(raw.get("num_total_gpus", 0)),
            "memory_gb": float(raw.get("memory", math.nan)),
            "model_path": req["model"], "system": req["system"], "backend": req["backend"],
            "backend_version": result.backend_version, "mode": result.mode,
            "database_mode": options.get("database_mode", "SILICON"),
            "quant": {k: raw.get(k) for k in ("gemm", "moe", "kvcache", "fmha")},
            "batch": req["batch"], "isl": req["isl"], "osl": req["osl"], "nextn": req["nextn"],
            "nextn_accepted": req["nextn_accepted"], "accept_length": req["accept_length"],
            "proxy": req["model"] == "@qwen3-next-proxy", "warnings": [w for w in [result.kv_cache_warning] if w],
            "source": f"aiconfigurator {getattr(aiconfigurator, '__version__', '?')} cli_estimate"}


def answer_safely(req: dict) -> dict:
    """_answer, with anything it raises (a result of another shape, an import that fails) as an
    error answer: the same in-process as in the worker."""
    try:
        return _answer(req)
    except (Exception, SystemExit) as exc:
        return {"error": "error", "message": f"aiconfigurator failed: {type(exc).__name__}: {_one_line(exc)}"}


def _one_line(exc: BaseException) -> str:
    """An exception's text on one line (a note is a line)."""
    return " ".join(str(exc).split())


def _missing_model(model: str) -> str | None:
    """Why aiconfigurator would need the network for this model (no config shipped, not a local folder)."""
    if Path(model).is_dir():
        return None if (Path(model) / "config.json").exists() else f"{model} has no config.json"
    import aiconfigurator_core

    shipped = Path(aiconfigurator_core.__file__).parent / "model_configs"
    if (shipped / f"{model.replace('/', '--')}_config.json").exists():
        return None
    return (f"no config for {model} ships with aiconfigurator (and there is no network); shipped: "
            + ", ".join(sorted(p.name[:-len('_config.json')].replace('--', '/') for p in shipped.glob('*_config.json')
                               if not p.name.endswith('_hf_quant_config.json'))))


def _kind(exc: BaseException) -> str:
    name = type(exc).__name__
    text = str(exc)
    if name in ("PerfDataNotAvailableError", "InterpolationDataNotAvailableError", "HuggingFaceDownloadError",
                "UnsupportedWideepConfigError", "UnsupportedAttentionBackendError", "InsufficientMemoryError",
                "KVCacheCapacityError", "MissingSystemFlopsError", "EmpiricalNotImplementedError",
                "SolNotImplementedError", "AssertionError"):
        return "not_expressible"
    if isinstance(exc, ValueError) or "OOM" in text or "not supported" in text or "No database" in text:
        return "not_expressible"
    return "error"


@functools.lru_cache(maxsize=1)
def _proxy_folder() -> str:
    """A config.json for Qwen3-Next-80B-A3B in aiconfigurator's Qwen3.5-MoE format (written once per process)."""
    import aiconfigurator_core

    base = json.loads((Path(aiconfigurator_core.__file__).parent / "model_configs" / _PROXY_BASE).read_text())
    base["text_config"].update(_PROXY_TEXT)
    folder = Path(tempfile.mkdtemp(prefix="aic-qwen3-next-")) / "Qwen3-Next-80B-A3B-proxy"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(base, indent=1))
    return str(folder)


def _worker() -> None:
    requests = json.loads(sys.stdin.read())
    answers = [answer_safely(req) for req in requests]
    print(MARK + json.dumps(answers), flush=True)


if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
    _worker()
