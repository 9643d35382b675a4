"""Every catalog entry loads, cites its sources, and assistants fit their targets."""
from __future__ import annotations

import pytest

from mtpsim import catalog

MODELS, HARDWARE = catalog.names("models"), catalog.names("hardware")
REQUIRED_MODELS = {"deepseek-v3", "glm-4.5", "qwen3-next-80b-a3b", "mimo-7b", "mimo-v2-flash", "step-3.5-flash",
                   "gemma-4-e2b", "gemma-4-26b-a4b", "gemma-4-e2b-assistant", "gemma-4-26b-a4b-assistant",
                   "llama-3.1-8b", "meta-mtp-7b"}
REQUIRED_HARDWARE = {"h100-sxm", "h200", "b200", "mi300x", "a100-80g", "cpu"}


def test_required_entries_exist():
    assert REQUIRED_MODELS <= set(MODELS) and REQUIRED_HARDWARE <= set(HARDWARE)


@pytest.mark.parametrize("name", MODELS)
def test_model_loads_and_cites_sources(name):
    spec = catalog.load_model(name)
    text = (catalog.CATALOG_DIR / "models" / f"{name}.yaml").read_text()
    assert text.startswith("#") and "source" in text.lower()
    assert spec.name == name and spec.num_layers == len(spec.expanded_layers)


@pytest.mark.parametrize("name", HARDWARE)
def test_hardware_loads_and_cites_sources(name):
    hw = catalog.load_hardware(name)
    assert (catalog.CATALOG_DIR / "hardware" / f"{name}.yaml").read_text().startswith("#")
    assert hw.flops_per_s("bf16") > 0


@pytest.mark.parametrize("name", [m for m in MODELS if catalog.load_model(m).assistant])
def test_assistant_reads_layers_its_target_has(name):
    target = catalog.load_model(name)
    assistant = catalog.load_model(target.assistant)
    assert assistant.role == "assistant" and assistant.backbone_hidden_size == target.hidden_size
    windows = {"target_last_sliding": [a for a in target.attention_kinds.values() if a.window],
               "target_last_full": [a for a in target.attention_kinds.values() if not a.window]}
    for att in assistant.attention_kinds.values():
        source = windows[att.kv_source][-1]
        assert (att.num_kv_heads, att.head_dim, att.window) == (source.num_kv_heads, source.head_dim, source.window)


def test_mtp_models_have_mtp_and_others_do_not():
    for name in ("deepseek-v3", "glm-4.5", "qwen3-next-80b-a3b", "mimo-7b", "mimo-v2-flash", "step-3.5-flash"):
        assert catalog.load_model(name).mtp is not None
    assert catalog.load_model("mimo-v2-flash").mtp.num_layers == 3
    assert catalog.load_model("gemma-4-e2b").mtp is None


def test_fp4_on_hopper_computes_in_fp8():
    assert catalog.load_hardware("h200").flops_per_s("fp4") == catalog.load_hardware("h200").peak_flops["fp8"]
    assert catalog.load_hardware("b200").flops_per_s("fp4") == catalog.load_hardware("b200").peak_flops["fp4"]
