"""Every catalog entry loads, cites its sources, and assistants fit their targets."""
from __future__ import annotations

import shutil

import pytest
import yaml

from mtpsim import catalog, catalog_lookup
from mtpsim import scenario as sc
from mtpsim.errors import ScenarioError
from tests.conftest import BASE

MODELS, HARDWARE = catalog_lookup.names("models"), catalog_lookup.names("hardware")
REQUIRED_MODELS = {"deepseek-v3", "glm-4.5", "qwen3-next-80b-a3b", "mimo-7b", "mimo-v2-flash", "step-3.5-flash",
                   "gemma-4-e2b", "gemma-4-26b-a4b", "gemma-4-e2b-assistant", "gemma-4-26b-a4b-assistant",
                   "llama-3.1-8b", "meta-mtp-7b"}
REQUIRED_HARDWARE = {"h100-sxm", "h200", "b200", "mi300x", "a100-80g", "cpu"}


def test_required_entries_exist():
    assert set(MODELS) >= REQUIRED_MODELS and set(HARDWARE) >= REQUIRED_HARDWARE


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
    # the peaks are the file's numbers (yaml reads '989.5e12' as a string: the schema must turn it into
    # that float, not drop or rescale it), and a narrower type never has a lower peak
    raw = yaml.safe_load((catalog.CATALOG_DIR / "hardware" / f"{name}.yaml").read_text())["peak_flops"]
    assert raw and {d: hw.flops_per_s(d) for d in raw} == {d: float(v) for d, v in raw.items()}
    widths = [d for d in ("fp32", "bf16", "fp8", "fp4") if d in raw]
    assert [hw.flops_per_s(d) for d in widths] == sorted(hw.flops_per_s(d) for d in widths)


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


# ----------------------------------------------------------------------------- user catalogs

def _renamed(kind: str, name: str, new: str) -> str:
    text = (catalog.CATALOG_DIR / kind / f"{name}.yaml").read_text()
    return text.replace(f"\nname: {name}\n", f"\nname: {new}\n")


def test_user_catalog_folders_are_searched_before_the_built_in_one(tmp_path, monkeypatch):
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        (folder / "models").mkdir(parents=True)
    (first / "models" / "mine.yaml").write_text(_renamed("models", "deepseek-v3", "mine"))
    (second / "models" / "mine.yaml").write_text("not: used\n")
    (second / "models" / "deepseek-v3.yaml").write_text(_renamed("models", "mimo-7b", "deepseek-v3"))
    monkeypatch.setenv("MTPSIM_CATALOG", f"{first}:{second}")
    assert {"mine", "deepseek-v3", "glm-4.5"} <= set(catalog_lookup.names("models"))
    assert catalog.load_model("mine").num_layers == 61
    assert catalog.load_model("deepseek-v3").hidden_size == catalog.load_model("mimo-7b").hidden_size  # shadowed


def test_a_missing_user_catalog_folder_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "nowhere"))
    with pytest.raises(ScenarioError, match="MTPSIM_CATALOG: no such folder"):
        catalog_lookup.names("models")


@pytest.mark.parametrize("name", ["..", "../deepseek-v3", "/etc/passwd", ".hidden", "a/../b", ""])
def test_a_name_never_leaves_its_catalog_folder(name):
    with pytest.raises(ScenarioError, match="catalog name"):
        catalog.load_model(name)


def test_a_file_path_is_read_as_a_spec(tmp_path, write_scenario):
    (tmp_path / "my-model.yaml").write_text(_renamed("models", "deepseek-v3", "my-model"))
    s = sc.load(write_scenario({**BASE, "model": "my-model.yaml"}))[0]   # beside the scenario
    assert s.specs.model.name == "my-model"
    over = sc.load(write_scenario({**BASE, "model": {"from": str(tmp_path / "my-model.yaml"),
                                                     "dtypes": {"experts": "fp4"}}}))[0]
    assert over.specs.model.dtypes.experts == "fp4"


@pytest.mark.parametrize("ref, key, reason", [
    ("..", "model", "not a models catalog name"),
    ("nowhere/model.yaml", "model", "no such file"),
    ({"from": "../no-such-model.yaml"}, "model.from", "no such file"),
    ({"from": ".."}, "model.from", "not a models catalog name"),
])
def test_bad_references_name_the_key(write_scenario, ref, key, reason):
    with pytest.raises(ScenarioError) as err:
        sc.load(write_scenario({**BASE, "model": ref}))
    assert err.value.key == key and reason in err.value.reason and "\n" not in err.value.message


def test_profiles_resolve_by_name_from_user_catalogs_and_the_old_spelling(tmp_path, monkeypatch):
    from mtpsim.costs.profile import PROFILES_DIR, find_profile
    shutil.copytree(PROFILES_DIR / "cpu", tmp_path / "profiles" / "my-cpu")
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path))
    assert find_profile("my-cpu") == tmp_path / "profiles" / "my-cpu"
    assert find_profile("calibrate/profiles/cpu") == PROFILES_DIR / "cpu"  # scenarios written before the move
    assert find_profile("../cpu") is None and find_profile("..") is None


def test_a_catalog_file_is_read_again_once_it_changes(tmp_path, monkeypatch, write_scenario):
    """Parses and specs are cached per version of a file (catalog_files.stamped): an edit between two
    loads in one process is seen, and what a caller does to its copy never reaches the cache."""
    (tmp_path / "models").mkdir()
    entry = tmp_path / "models" / "mine.yaml"
    entry.write_text(_renamed("models", "deepseek-v3", "mine"))
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path))
    first = sc.load(write_scenario({**BASE, "model": "mine"}))[0].specs.model
    hits = catalog._spec_at.cache_info().hits
    again = sc.load(write_scenario({**BASE, "model": "mine"}))[0].specs.model
    assert catalog._spec_at.cache_info().hits > hits  # validated once
    assert again == first and again is not first  # each load its own copy (campaign 28)
    catalog.resolve("models", "mine", "test")["vocab_size"] = 3  # a caller's copy, not the cache
    assert catalog.resolve("models", "mine", "test")["vocab_size"] == 129280
    entry.write_text(entry.read_text().replace("hidden_size: 7168", "hidden_size: 7680") + "\n")
    assert sc.load(write_scenario({**BASE, "model": "mine"}))[0].specs.model.hidden_size == 7680
    entry.write_text("- not a mapping\n")
    with pytest.raises(ScenarioError, match="must be a mapping"):
        sc.load(write_scenario({**BASE, "model": "mine"}))


def _user_model(folder, name: str, aliases: list[str]) -> None:
    """A user catalog entry: deepseek-v3's file under another name, listing `aliases`."""
    raw = yaml.safe_load((catalog.CATALOG_DIR / "models" / "deepseek-v3.yaml").read_text())
    (folder / "models").mkdir(parents=True, exist_ok=True)
    (folder / "models" / f"{name}.yaml").write_text(yaml.safe_dump({**raw, "name": name, "aliases": aliases}))


def test_an_alias_names_its_entry_in_a_scenario_and_a_from(write_scenario):
    """deepseek-r1 is deepseek-v3's checkpoint: a scenario naming it runs deepseek-v3's spec, as
    `model:` and as `from:`, and the unknown-name hint offers the aliases."""
    for model in ("deepseek-r1", {"from": "deepseek-v3.1", "dtypes": {"experts": "fp4"}}):
        point = sc.load(write_scenario({**BASE, "model": model}))[0]
        assert point.specs.model.name == "deepseek-v3" and point.specs.model.num_layers == 61
        # the headers name the entry priced, and the alias where the scenario gave one
        assert point.describe_model() == ("deepseek-v3 (as deepseek-r1)" if model == "deepseek-r1" else "deepseek-v3")
    assert catalog.load_model("deepseek-r1-0528") == catalog.load_model("deepseek-v3")
    with pytest.raises(ScenarioError, match="did you mean deepseek-r1"):
        sc.load(write_scenario({**BASE, "model": "deepseek-r2"}))


def test_a_file_of_that_name_wins_over_an_alias_and_two_claims_are_refused(tmp_path, monkeypatch, write_scenario):
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path))
    _user_model(tmp_path, "deepseek-r1", [])  # a user's own deepseek-r1 file: the alias steps aside
    _user_model(tmp_path, "my-v3", ["deepseek-r1", "shared-name"])
    _user_model(tmp_path, "other-v3", ["shared-name"])
    assert catalog.load_model("deepseek-r1").name == "deepseek-r1"
    with pytest.raises(ScenarioError, match=r"alias of 2 models catalog entries \(my-v3, other-v3\)"):
        sc.load(write_scenario({**BASE, "model": "shared-name"}))


def test_an_entry_copied_under_one_of_its_aliases_loads(tmp_path, monkeypatch):
    """deepseek-v3's file saved as deepseek-r1 (its name changed, its aliases kept) is that entry:
    its own name among its aliases changes nothing, and the listing does not repeat it."""
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path))
    _user_model(tmp_path, "deepseek-r1", ["deepseek-r1", "deepseek-v3.1"])
    spec = catalog.load_model("deepseek-r1")
    assert spec.name == "deepseek-r1" and spec.summary().endswith("(also named deepseek-v3.1)")


@pytest.mark.parametrize("ref,hint", [("deepseek-ai/DeepSeek-R1", "the catalog names it deepseek-r1"),
                                      ("Qwen/Qwen3-8B", "the catalog names it qwen3-8b"),
                                      ("meta-llama/Llama-3.1-70B-Instruct", "the catalog names it llama-3.1-70b-instruct"),
                                      ("someone/unknown-model", "give a catalog name from `mtpsim models`, or the "
                                                                "checkpoint's config with hf_config")])
def test_a_hugging_face_repo_id_is_refused_with_the_name_to_write(write_scenario, ref, hint):
    """A repo id has a '/', so it reads as a file path; the refusal says what it stands for."""
    with pytest.raises(ScenarioError, match="no such file \\(a Hugging Face repo id is not looked up: ") as err:
        sc.load(write_scenario({**BASE, "model": ref}))
    assert hint in err.value.message


def test_a_missing_yaml_file_gets_no_repo_id_hint(write_scenario):
    with pytest.raises(ScenarioError) as err:
        sc.load(write_scenario({**BASE, "model": "models/mine.yaml"}))
    assert "no such file" in err.value.message and "Hugging Face" not in err.value.message


def test_an_alias_no_scenario_could_name_is_refused(tmp_path, monkeypatch):
    """An alias with a '/' reads as a file path wherever a scenario gives it, so no scenario could
    ever reach the entry by it: refused where the entry loads, naming the file and the key."""
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path))
    _user_model(tmp_path, "my-v3", ["deepseek-ai/DeepSeek-R1"])
    with pytest.raises(ScenarioError, match="aliases.0: 'deepseek-ai/DeepSeek-R1' is not a catalog name") as err:
        catalog.load_model("my-v3")
    assert err.value.where.endswith("my-v3.yaml")
