"""Engine files and releases, by class (a user catalog's engines/<kind>.yaml, the shipped ones, and
`engine.version`). As in test_bad_input.py: bad input is one stderr line, exit status 2, naming the
file and key; semantic nonsense that runs is one warning."""
from __future__ import annotations

import pytest

from mtpsim import catalog, catalog_lookup, cli
from mtpsim.engine_releases import resolve_engine
from mtpsim.packagedata import data_dir
from tests.test_bad_input import one_line_error
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)
from tests.test_bad_input_7 import DENSE  # the scenario, one home

CAP_99 = '  - {name: cap_99, field: speculative_max_running_requests, value: 99, since: "0.5.0", source: x}\n'


def _scenario(tmp_path, text: str = DENSE) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return str(path)


def _engine(tmp_path, monkeypatch, edit, kind: str = "sglang") -> str:
    """A user catalog holding the shipped engine file `kind`, edited; its path."""
    folder = tmp_path / "cat" / "engines"
    folder.mkdir(parents=True, exist_ok=True)
    text = (data_dir() / "engines" / f"{kind}.yaml").read_text()
    edited = edit(text)
    assert edited != text, "the edit changed nothing"
    (folder / f"{kind}.yaml").write_text(edited)
    monkeypatch.setenv("MTPSIM_CATALOG", str(tmp_path / "cat"))
    return str(folder / f"{kind}.yaml")


def _engines_refuses(tmp_path, capsys, monkeypatch, edit, key: str, word: str, kind: str = "sglang") -> str:
    """`mtpsim engines` over a user catalog's engines/<kind>.yaml edited by `edit`: one line naming
    that file and `key`; the line."""
    path = _engine(tmp_path, monkeypatch, edit, kind)
    line = one_line_error(capsys, ["engines"], key, word)
    assert line.startswith(f"mtpsim: error: {path}: "), line
    return line


def _rule_index(name: str, kind: str = "sglang") -> int:
    """The index of the shipped rule `name` in engines/<kind>.yaml (a key path names rules by index)."""
    import yaml
    rules = yaml.safe_load((data_dir() / "engines" / f"{kind}.yaml").read_text())["rules"]
    return next(i for i, r in enumerate(rules) if r["name"] == name)


def _rule_before(name: str, rule: str):
    """An edit putting `rule` (a YAML list item) just before the rule named `name`."""
    return lambda t: t.replace(f"  - name: {name}\n", f"{rule}  - name: {name}\n", 1)


def _refused(tmp_path, capsys, monkeypatch, edit, key: str, word: str, kind: str = "sglang",
             argv: tuple[str, ...] = ()) -> str:
    path = _engine(tmp_path, monkeypatch, edit, kind)
    line = one_line_error(capsys, ["cost", _scenario(tmp_path), *argv], key, word)
    assert line.startswith(f"mtpsim: error: {path}: "), line
    return line


# ------------------------------------------------------------- 1. two rules, one field, one release

@pytest.mark.parametrize("edit, key, other, releases", [
    # the brief's example: a second cap beside spec_running_cap (from 0.4.5), later in the file
    (_rule_before("spec_v2_overlap", CAP_99), "rules.3", "spec_running_cap (rules.2)", "0.5.0 to 0.5.23"),
    # bounded on both sides, and listed first: the later rule (the shipped one) is named at its index
    (_rule_before("spec_running_cap_32", '  - {name: cap_40, field: speculative_max_running_requests, value: 40, '
                  'since: "0.4.3", until: "0.4.5", source: x}\n'), "rules.1", "cap_40 (rules.0)", "0.4.4"),
    # a field other than the cap: eager passes over the draft-extend rule's last two releases
    (_rule_before("spec_v2_overlap", '  - {name: eager_verify, field: eager_passes, value: [verify], since: "0.4.5", '
                  'until: "0.4.9", source: x}\n'), "rules.3", "draft_extend_eager (rules.1)", "0.4.5 to 0.4.6"),
])
def test_two_rules_setting_one_field_at_one_release_are_refused(tmp_path, capsys, monkeypatch, edit, key, other,
                                                               releases):
    """Before: the later rule won at the releases both hold at, without a word (and leaving it out,
    engine.ignore_rules, brought back the other)."""
    line = _refused(tmp_path, capsys, monkeypatch, edit, key, other)
    assert f"at {releases}:" in line, line


def test_rules_of_one_field_that_meet_without_overlapping_pass(tmp_path, monkeypatch):
    """since is inclusive, until exclusive: a rule until 0.4.4 and another since 0.4.4 never clash."""
    _engine(tmp_path, monkeypatch, _rule_before("spec_running_cap_32", CAP_99.replace('since: "0.5.0"',
                                                                                      'since: "0.4.0", until: "0.4.4"')))
    assert [catalog.load_engine("sglang", v).speculative_max_running_requests for v in ("0.4.0", "0.4.3", "0.4.4")] == \
        [99, 99, 32]


def test_the_shipped_engine_files_hold_one_rule_per_field_and_release(monkeypatch):
    """sglang.yaml's two side-stream rules overlapped from 0.5.6 (the later won): the first now ends
    there, and every release still resolves to what it did."""
    monkeypatch.delenv("MTPSIM_CATALOG", raising=False)
    for name in catalog_lookup.names("engines"):
        assert catalog.load_engine(name).name == name  # the whole file checked, as a scenario resolves it
    sglang = catalog.engine_file("sglang")
    assert [resolve_engine(sglang, v).shared_expert_stream for v in ("0.4.7", "0.4.8", "0.5.5", "0.5.6", "0.5.12")] == \
        ["none", "small_passes", "small_passes", "graphs", "graphs"]


def test_leaving_out_a_rule_that_no_longer_holds_warns(tmp_path, capsys):
    lines = warnings_of(capsys, ["cost", _scenario(tmp_path, DENSE + "engine: {ignore_rules: [shared_experts_dual_stream]}\n")])
    assert any(": engine.ignore_rules: rule shared_experts_dual_stream does not hold at sglang 0.5.12" in line
               for line in lines), lines


# ------------------------------------------------------------- 2. values without sane bounds

@pytest.mark.parametrize("old, new, key, word", [
    # the brief's example: a mem fraction of 5 (a 398 GB KV budget on an 85 GB GPU)
    ("2: 0.87, 1: 0.88}", "2: 0.87, 1: 5.0}", "rules.5.value", "fraction_by_tp.by_tp.1: Input should be less than or equal to 1"),
    ("2: 0.87, 1: 0.88}", "2: 0.87, 1: 0.0}", "rules.5.value", "fraction_by_tp.by_tp.1: Input should be greater than 0"),
    ("1: 0.88}, large: 0.88", "1: 0.88}, large: 1.5", "rules.5.value", "fraction_by_tp.large"),
    ("16: 0.79,", "0: 0.79,", "rules.5.value", "fraction_by_tp.by_tp.0: as a key"),  # tp 0
    ("raise_mib: 49152", "raise_mib: 1.0e+300", "rules.5.value", "fraction_by_tp.raise_mib"),
    ("    value: 48\n", "    value: 480000\n", "rules.2.value", "less than or equal to 100000"),  # as max_running_requests
    ("speculative_overlap_max_topk: 1 ", "speculative_overlap_max_topk: 65 ", "speculative_overlap_max_topk", "64"),
    ("    speculative_mib: 2048", "    speculative_mib: 1.0e+300", "kv_pool.reserved.speculative_mib", "less than"),
    # the file's own classes (the line that names its GPUs), then a rule's (memory_classes_v0520)
    ("chunked_prefill_tokens: 16384, graph_batch: 512, graph_batch_tp4: 512}                   # B200",
     "chunked_prefill_tokens: 99999999, graph_batch: 512, graph_batch_tp4: 512}                   # B200",
     "kv_pool.reserved.classes.5.chunked_prefill_tokens", "less than"),
    ("graph_batch: 512, graph_batch_tp4: 512}                   # B200",
     "graph_batch: 5120000, graph_batch_tp4: 512}                   # B200",
     "kv_pool.reserved.classes.5.graph_batch", "less than"),
    ("graph_batch: 48, graph_batch_tp4: 160}", "graph_batch: 4800000, graph_batch_tp4: 160}",
     f"rules.{_rule_index('memory_classes_v0520')}.value", "kv_pool.reserved.classes.1.graph_batch"),
    ("    value: 4096\n", "    value: 1.0e+300\n", f"rules.{_rule_index('spec_reserve_4gib')}.value",
     "kv_pool.reserved.speculative_mib"),
    ("block_tokens: 16}", "block_tokens: 99999999}", "prefix_cache.block_tokens", "less than"),
    ("balance_abs: 64,", "balance_abs: 6400000,", "dp_routing.balance_abs", "less than"),
])
def test_engine_values_past_what_a_scenario_may_give_are_refused(tmp_path, capsys, monkeypatch, old, new, key, word):
    """Before: the file's (or its rule's) value ran, however far past the scenario's own bound for
    the same quantity (engine.mem_fraction in (0, 1], engine.max_running_requests, speculative.topk...)."""
    _refused(tmp_path, capsys, monkeypatch, lambda t: t.replace(old, new, 1), key, word)


@pytest.mark.parametrize("old, new, key", [("  fraction: 0.9\n", "  fraction: 1.5\n", "kv_pool.fraction"),
                                           ("  graph_mib: 1024\n", "  graph_mib: 1.0e+300\n", "kv_pool.graph_mib"),
                                           ("\n  - {tokens: 8192}", "\n  - {tokens: 99999999}", "prefill_chunk.2.tokens")])
def test_a_vllm_file_is_bounded_too(tmp_path, capsys, monkeypatch, old, new, key):
    _refused(tmp_path, capsys, monkeypatch, lambda t: t.replace(old, new, 1), key, "", kind="vllm",
             argv=("--set", "engine.kind=vllm"))


# ------------------------------------------------------------- 3. hides names designs (and their passes)

@pytest.mark.parametrize("old, new, key, word", [
    ("  nextn: [draft", "  nexnt: [draft", "hides.nexnt", "'nextn'"),  # the brief's example
    ("  block: [draft, verify]", "  blocks: [draft, verify]", "hides.blocks", "as a key"),
    ("  multi_layer: [verify, extend]", "  multi_layer: [verify, extend, draft]", "hides.multi_layer.2",
     "runs no draft pass (its passes: verify, extend)"),
    ("  none: [decode]", "  none: [decode, prefill]", "hides.none.1", "runs no prefill pass"),
])
def test_hides_names_a_design_and_the_passes_it_runs(tmp_path, capsys, monkeypatch, old, new, key, word):
    """Before: `nexnt` was a design of no name, so nextn hid nothing (its host time exposed every
    iteration), and a pass kind its design never runs hid nothing either, both without a word."""
    _refused(tmp_path, capsys, monkeypatch, lambda t: t.replace(old, new, 1), key, word)


# ------------------------------------------------------------- 4. releases written as releases

@pytest.mark.parametrize("version, word", [
    ("0.5.12+evil", "a local '+' part"), ("V0.5.12", "leading 'V'"), ("v0.5.12", "leading 'v'"),
    ("0.5.12.dev0", "development build of 0.5.12"), ("0.5.12rc1", "pre-release of 0.5.12"),
    ("0.5.12.post1.dev0", "development build"), ("0.5.012", "write it as 0.5.12"), ("0.5.12-1", "0.5.12.post1"),
    ("1!0.5.12", "epoch"), ("9.9.9", "known: 0.4.0"),
])
def test_an_engine_version_is_a_release_as_published(tmp_path, capsys, version, word):
    """Before: each ran (and was recorded) as 0.5.12 ('9.9.9' and the epoch were already refused)."""
    line = one_line_error(capsys, ["cost", _scenario(tmp_path, DENSE + f"engine: {{version: '{version}'}}\n")],
                          "engine.version", word)
    assert "unknown sglang version" in line


def test_a_post_release_still_runs_its_release(tmp_path, capsys):
    assert cli.main(["run", _scenario(tmp_path, DENSE + "engine: {version: '0.5.12.post1'}\n"), "--out",
                     str(tmp_path / "o")]) == 0
    assert "version: 0.5.12.post1" in (tmp_path / "o" / "scenario.resolved.yaml").read_text()


@pytest.mark.parametrize("old, new, key, word", [
    ('since: "0.5.11"', 'since: "0.5.11+foo"', "rules.3.since", "local '+' part"),
    ('since: "0.5.11"', 'since: "V0.5.11"', "rules.3.since", "leading 'V'"),
    ('since: "0.5.11"', 'since: "0.5.11.dev0"', "rules.3.since", "development build"),
    ('since: "0.5.11"', 'since: "0.5.11rc2"', "rules.3.since", "pre-release"),
    ('since: "0.5.11"', 'since: "9.9.9"', "rules.3.since", "not among versions.known"),  # would never apply
    ('until: "0.4.7"', 'until: "0.4.6.5"', "rules.1.until", "not among versions.known"),
    ('until: "0.4.7"', 'until: "0.4.0"', "rules.1.until", "holds for no release of versions.known"),
    ('default: "0.5.12"', 'default: "0.5.12+evil"', "versions.default", "local '+' part"),
    ('"0.5.23"]', '"0.5.23", "0.6.0rc1"]', "versions.known", "pre-release of 0.6.0"),
])
def test_an_engine_files_releases_are_releases_it_knows(tmp_path, capsys, monkeypatch, old, new, key, word):
    """Before: a rule since '0.5.0+foo', 'V0.5.0' or '0.5.0.dev0' held from 0.5.0, and one since a
    release the file does not know was accepted and never applied."""
    _refused(tmp_path, capsys, monkeypatch, lambda t: t.replace(old, new, 1), key, word)


def test_a_rule_bound_at_a_post_release_of_a_known_one_still_works(tmp_path, capsys, monkeypatch):
    _engine(tmp_path, monkeypatch, lambda t: t.replace('since: "0.5.11"', 'since: "0.5.11.post1"', 1))
    assert cli.main(["cost", _scenario(tmp_path)]) == 0


# ------------------------------------------------------------- 5. `mtpsim engines` names the file read

@pytest.mark.parametrize("old, new, key, word", [
    ("\nrules:\n", "\nrules: 5\nold_rules:\n", "rules", "expected a list of rules, got 5"),
    ("\nversions:\n", "\nversions: 5\nold_versions:\n", "versions", ""),
    ("name: vllm\n", "name: other\n", "name", "not the file's name"),
    ("name: vllm\n", "", "name", "None is not the file's name 'vllm'"),
    ("  - name: v1_spec_async\n", '  - {name: spec_async_early, field: speculative_overlap, value: true, since: "0.13.0", '
     'source: x}\n  - name: v1_spec_async\n', "rules.3", "spec_async_early (rules.2) does, at 0.14.0 to 0.34.0"),
])
def test_engines_names_a_broken_user_file_by_its_path(tmp_path, capsys, monkeypatch, old, new, key, word):
    """Before: `engines/vllm.yaml` (or the name the file claimed, `engines/None.yaml`) in place of
    the file read, a traceback-free but half-printed listing, and a file no scenario could resolve
    (two rules at one release) listed as fine."""
    path = _engine(tmp_path, monkeypatch, lambda t: t.replace(old, new, 1), kind="vllm")
    line = one_line_error(capsys, ["engines"], key, word)
    assert line.startswith(f"mtpsim: error: {path}: {key}: "), line
    assert cli.main(["engines"]) == 2
    out = capsys.readouterr().out
    assert "vllm: invalid (the error is on stderr)" in out and "sglang: default 0.5.12" in out, out


def test_engines_names_a_nameless_broken_file_by_its_path(tmp_path, capsys, monkeypatch):
    """Before: `engines/None.yaml: rules: expected a list of rules, got 5` (the name the file lacks)."""
    path = _engine(tmp_path, monkeypatch, lambda t: t.replace("name: vllm\n", "").replace("\nrules:\n", "\nrules: 5\nr:\n"),
                   kind="vllm")
    line = one_line_error(capsys, ["engines"], "rules", "expected a list of rules, got 5")
    assert line.startswith(f"mtpsim: error: {path}: rules: "), line


def test_engines_lists_the_shipped_files_as_before(capsys, monkeypatch):
    monkeypatch.delenv("MTPSIM_CATALOG", raising=False)
    assert cli.main(["engines"]) == 0
    out = capsys.readouterr().out
    assert "shared_experts_dual_stream: shared_expert_stream = small_passes (from 0.4.8 before 0.5.6)" in out


# ------------------------------------------------------------- 6. a rule that sets a key inside a section

def test_a_rule_into_a_section_the_file_lacks_is_refused(tmp_path, capsys, monkeypatch):
    """vLLM's file sizes its pool without SGLang's memory classes: a rule setting one of their figures
    had nothing to land in (a KeyError deep in the resolution before the check)."""
    rule = '  - {name: reserve, field: kv_pool.reserved.speculative_mib, value: 0, since: "0.14.0", source: x}\n'
    _engines_refuses(tmp_path, capsys, monkeypatch, _rule_before("v1_spec_async", rule), "rules.2.field",
                     "no kv_pool.reserved section", kind="vllm")


def test_a_rule_into_a_section_changes_that_key_alone():
    """spec_reserve_4gib sets one figure of kv_pool.reserved: the classes and the rest stay the file's."""
    at_13, at_14 = catalog.load_engine("sglang", "0.5.13"), catalog.load_engine("sglang", "0.5.14")
    assert (at_13.kv_pool.reserved.speculative_mib, at_14.kv_pool.reserved.speculative_mib) == (4096, 0)
    assert at_13.kv_pool.reserved.model_copy(update={"speculative_mib": 0}) == at_14.kv_pool.reserved
    assert catalog.load_engine("sglang", "0.5.9").kv_pool.reserved.speculative_mib == 2048
