"""Bad-input campaign 25: what a stdout that cannot encode a question does, whom an error blames
when --set rewrites the sweep, a --set that takes a swept key over, a key path part in octal, a
misspelt required key, keys YAML reads as booleans or fractions, huge JSON integers, a stray
merge key, a run folder's table that is a folder, and a search whose target no point can meet.

Probed, and already fine (about 850 cases): empty, comment-only, non-UTF-8, UTF-16 and NUL-holding
files, a 30 MB file, duplicate keys, a billion-laughs bomb, 5,000-deep nesting, multi-document
files, directives, custom tags, undefined and recursive aliases, a folder, a FIFO, a symlink loop,
/dev/null and /dev/stdin as the scenario; inf, nan, 1e400, -0, 10**30, hex, octal, sexagesimal and
underscored numbers, lists or maps where scalars go, at every level; bad --set paths, parts,
indices, tags and repeats; junk in every numeric flag; --out at existing files, the scenario
itself, `.`, `/`, links, /proc; malformed traces of every format; tampered run folders for plot.

Found and fixed:
- a `question` (or any printed value) that stdout's encoding cannot hold (a cp1252 console,
  PYTHONIOENCODING=ascii) was a UnicodeEncodeError traceback from run, recommend and search:
  cli.main prints such text as backslash escapes;
- with any `--set sweep=...`, an error in the file was blamed on --set (`--set sweep=null` beside
  a bad `workload.concurrency`): only a key the flag's sweep entries sweep is the flag's
  (overrides._swept_by_set);
- `--set KEY=V` over a swept KEY dropped the sweep without a word, where `--seeds` over a swept
  `seeds` warned: both say which swept values are not run (sweep._over_sweep, one wording);
- a --set key path part with a leading zero (`steps_by_batch.010`) was key 10, where a file's
  `010:` is refused as YAML 1.1's octal 8: refused alike (overrides._no_octal_parts);
- a misspelt required key said only `X: required key is missing`: the key written is named, with
  the one it most likely meant (errors._stray_beside);
- a YAML key read as a boolean, a fraction or null (`true:`, `1.5:`, `~:`) was reported at the
  path `engine.1` or `engine.1.5`: refused at the mapping, as written (yamlfiles._NOT_KEYS);
- a config.json integer of 5,000 digits gave Python's advice to call sys.set_int_max_str_digits:
  said in words (textfiles._whole);
- a bare `<<` as a list item or a value said `could not determine a constructor for the tag
  tag:yaml.org,2002:merge` without a key path: named where it stands;
- `plot` of a run folder whose requests.csv is a folder skipped the latency plot without a word:
  refused (run_reader.read_run_table);
- `search --min-user-tps 1e7` (a TPOT of 0.1 us, which --tpot refuses at once) ran the whole search
  before saying no point meets it: the two flags take the same bounds.

Noticed, and made clearer rather than refused: a search or recommend of thousands of points
starts in a log without a word for its first minute. A log now gets the count as it starts and,
each minute, the time the rest takes at the rate so far (sim/progress.py `Heartbeat`;
tests/test_progress.py).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mtpsim import cli
from tests.test_bad_input import BASE, one_line_error
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = str(ROOT / "scenarios" / "quickstart.yaml")
# the campaigns' small scenario (one nextn step), with a question stdout may not encode
SMALL = BASE.replace("name: p\n", 'name: small\nquestion: "Ünïcødé → how much does nextn buy?"\n').replace(
    "steps: 2}", "steps: 1}")


def _file(tmp_path: Path, text: str, name: str = "s.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# ------------------------------------------------------------- 1. a stdout that cannot encode the question

def test_a_question_stdout_cannot_encode_is_printed_escaped(tmp_path):
    """Before: `Q: Ünïcødé ...` to an ASCII stdout was a UnicodeEncodeError traceback (exit 1) after
    the run folder was half written, so the same --out was then refused as not empty."""
    scenario = _file(tmp_path, SMALL)
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    done = subprocess.run([sys.executable, "-m", "mtpsim.cli", "run", scenario, "--out", str(tmp_path / "o"),
                           "--jobs", "1"], capture_output=True, env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr
    assert b"Q: \\xdcn\\xefc\\xf8d\\xe9 \\u2192 how much" in done.stdout
    import yaml  # the run folder keeps the question as written (YAML's escapes read back to it)
    resolved = yaml.safe_load((tmp_path / "o" / "scenario.resolved.yaml").read_text(encoding="utf-8"))
    assert resolved["question"] == "Ünïcødé → how much does nextn buy?"


# ------------------------------------------------------------- 2. whom an error blames when --set rewrites the sweep

@pytest.mark.parametrize("sets", [["sweep=null"], ["sweep={seed: [1, 2]}"]])
def test_a_set_of_the_sweep_leaves_the_files_own_error_the_files(tmp_path, capsys, sets):
    """Before: any `--set sweep...` took the blame for every error in the file: `--set: workload.
    concurrency: ...` for a file whose own concurrency was `x`, and the file was not named."""
    scenario = _file(tmp_path, SMALL.replace("concurrency: 2", "concurrency: x"))
    argv = ["cost", scenario]
    for s in sets:
        argv += ["--set", s]
    line = one_line_error(capsys, argv, "workload.concurrency", "valid integer")
    assert line.startswith(f"mtpsim: error: {scenario}: ")


def test_a_swept_value_the_set_gives_is_still_the_flags(capsys):
    line = one_line_error(capsys, ["cost", QUICKSTART, "--set", "sweep={workload.concurrency: [1, x]}"],
                          "workload.concurrency", "valid integer")
    assert line.startswith("mtpsim: error: --set: ")


# ------------------------------------------------------------- 3. a --set over a swept key

@pytest.mark.parametrize("sweep, flag, lost", [
    ("{speculative.steps: [1, 2]}", ["--set", "speculative.steps=2"], "the swept value 1 is not run"),
    ("{seeds: [1, 3]}", ["--set", "seeds=2"], "the swept values 1, 3 are not run"),
    ("{speculative.steps: [1, 2]}", ["--set", "speculative={design: nextn, steps: 1}"],
     "the swept values 1, 2 are not run"),
])
def test_a_set_over_a_swept_key_says_which_swept_values_are_not_run(tmp_path, capsys, sweep, flag, lost):
    """Before: silent (`--seeds` over a swept `seeds` said so, `--set` did not): the user's sweep
    ran one point, and only the `1 point(s)` of the header told."""
    scenario = _file(tmp_path, SMALL + f"sweep: {sweep}\n")
    warned = warnings_of(capsys, ["run", scenario, "--jobs", "1", "--out", str(tmp_path / "o"), *flag])
    key = sweep[1:sweep.index(":")]
    assert [w for w in warned if f": sweep.{key}: " in w] == [
        f"mtpsim: warning: {scenario}: sweep.{key}: --set {flag[1].split('=')[0]} sets {key} on every point, over "
        f"the sweep: {lost}"], warned


def test_a_set_equal_to_the_only_swept_value_says_nothing(tmp_path, capsys):
    scenario = _file(tmp_path, SMALL + "sweep: {speculative.steps: [1]}\n")
    warned = warnings_of(capsys, ["run", scenario, "--jobs", "1", "--out", str(tmp_path / "o"),
                                  "--set", "speculative.steps=1"])
    assert not [w for w in warned if "sweep.speculative.steps" in w], warned


# ------------------------------------------------------------- 4. a key path part in octal

@pytest.mark.parametrize("part, word", [("010", "octal number 8, not 10"), ("09", "the text '09', not 9")])
def test_a_set_key_part_with_a_leading_zero_is_refused_as_the_file_refuses_it(tmp_path, capsys, part, word):
    """Before: `--set speculative.policy.steps_by_batch.010=2` set batch 10, where the same `010:` in
    the file is refused (YAML 1.1 reads it as 8)."""
    scenario = _file(tmp_path, SMALL.replace("steps: 1}", "steps: 1, policy: {steps_by_batch: {1: 1}}}"))
    one_line_error(capsys, ["cost", scenario, "--set", f"speculative.policy.steps_by_batch.{part}=1"],
                   f"speculative.policy.steps_by_batch.{part}", word)
    bad = Path(scenario).read_text(encoding="utf-8").replace("{1: 1}", "{1: 1, 010: 1}")  # the file's own `010:`
    one_line_error(capsys, ["cost", _file(tmp_path, bad, "octal.yaml")], "", "number spelling")


# ------------------------------------------------------------- 5. a misspelt required key

@pytest.mark.parametrize("override, key, word", [
    ("speculative.policy={steps_by_batchs: {1: 1}}", "speculative.policy.steps_by_batchs",
     "unknown key (did you mean steps_by_batch? it is required)"),
    ("workload.shared_prefix={token: 128}", "workload.shared_prefix.token",
     "unknown key (did you mean tokens? it is required)"),
    ("speculative.policy={zzz: {1: 1}}", "speculative.policy.zzz",
     "unknown key (and the required key steps_by_batch is missing)"),
])
def test_a_misspelt_required_key_names_the_key_written(tmp_path, capsys, override, key, word):
    """Before: `speculative.policy.steps_by_batch: required key is missing`, the stray key the user
    typed never named."""
    one_line_error(capsys, ["cost", _file(tmp_path, SMALL), "--set", override], key, word)


def test_a_missing_required_key_alone_is_still_said_so(tmp_path, capsys):
    one_line_error(capsys, ["cost", _file(tmp_path, SMALL), "--set", "workload.shared_prefix={}"],
                   "workload.shared_prefix.tokens", "required key is missing")


# ------------------------------------------------------------- 6. keys YAML reads as booleans, fractions or null

@pytest.mark.parametrize("key, word", [("true", "a boolean"), ("yes", "a boolean"), ("1.5", "a fraction"),
                                       ("~", "null")])
def test_a_key_yaml_reads_as_no_name_is_refused_as_written(tmp_path, capsys, key, word):
    """Before: `engine: {true: 64}` was `engine.1: Keys should be strings (got True)` (True == 1 as
    a dict key), and `{1.5: 64}` `engine.1.5`, a path three levels deep."""
    scenario = _file(tmp_path, SMALL + f"engine: {{{key}: 64}}\n")
    line = one_line_error(capsys, ["cost", scenario], "engine", word)
    assert f"'{key}' as a key" in line and "line 9" in line


def test_a_quoted_true_is_a_name(tmp_path, capsys):
    one_line_error(capsys, ["cost", _file(tmp_path, SMALL + "engine: {'true': 64}\n")], "engine.true", "unknown key")


# ------------------------------------------------------------- 7. a huge integer in a config.json

def test_a_config_json_integer_of_thousands_of_digits_is_said_in_words(tmp_path, capsys):
    """Before: `not readable JSON: Exceeds the limit (4300 digits) for integer string conversion ...;
    use sys.set_int_max_str_digits`, advice for a programmer."""
    (tmp_path / "config.json").write_text('{"model_type": "llama", "hidden_size": ' + "9" * 5000 + "}")
    scenario = _file(tmp_path, SMALL.replace("model: deepseek-v3", f"model: {{hf_config: {tmp_path / 'config.json'}}}"))
    line = one_line_error(capsys, ["cost", scenario], "", "an integer 5,000 digits long")
    assert "sys.set_int_max_str_digits" not in line and "config.json" in line


# ------------------------------------------------------------- 8. a stray merge key

@pytest.mark.parametrize("text, key", [("acceptance: {per_depth: [<<, 0.75]}", "acceptance.per_depth.0"),
                                       ("question: <<", "question")])
def test_a_merge_key_outside_a_mappings_key_is_named_where_it_stands(tmp_path, capsys, text, key):
    """Before: `line 11: YAML tag not allowed: could not determine a constructor for the tag
    'tag:yaml.org,2002:merge'`: a tag the user never wrote, and no key."""
    body = "\n".join(line for line in SMALL.splitlines() if not line.startswith(text.split(":")[0] + ":"))
    one_line_error(capsys, ["cost", _file(tmp_path, body + "\n" + text + "\n")], key, "merge key")


# ------------------------------------------------------------- 9. a run folder's table that is a folder

def test_plot_refuses_a_run_table_that_is_a_folder(tmp_path, capsys):
    """Before: requests.csv made a folder dropped the latency plot without a word."""
    scenario = _file(tmp_path, SMALL.replace("question: \"Ünïcødé → how much does nextn buy?\"", "question: q"))
    out = tmp_path / "o"
    assert cli.main(["run", scenario, "--jobs", "1", "--out", str(out)]) == 0
    (out / "requests.csv").unlink()
    (out / "requests.csv").mkdir()
    capsys.readouterr()
    line = one_line_error(capsys, ["plot", str(out)], "", "not a file")
    assert "requests.csv" in line


# ------------------------------------------------------------- 10. a target no point can meet

@pytest.mark.parametrize("flag", [["--min-user-tps", "1e7"], ["--tpot", "0.0001ms"]])
def test_a_target_of_a_tpot_under_a_microsecond_is_refused_by_either_flag(capsys, flag):
    """Before: --tpot 0.0001ms was refused at once and the same target as --min-user-tps 1e7 ran
    the whole search before saying no point met it."""
    one_line_error(capsys, ["search", QUICKSTART, "--gpus", "8", *flag], "", "outside 1e-06..1e+06")
