"""Campaign 41's smaller notes, and bad-input campaign 42. Each test below failed on the code
before its fix:
- `--set hardware=h200` over `hardware: {from: h100-sxm, usd_per_gpu_hour: 2.5}` dropped the
  scenario's own fields for the catalog's without a word, and a mapping with another `from` said
  they went back to "their defaults" where the catalog entry gives them;
- $AICONFIGURATOR_PYTHON naming a bare command (`python3`) was "which does not exist": it was not
  looked up on $PATH as a shell runs it;
- a run or profile stopped part-way gave back its own folder but left the empty folders it had
  made above it (`--out p/q/r`: p/ and p/q/ stayed).
"""
from __future__ import annotations

import pytest

from mtpsim import cli, errors
from tests.test_bad_input import run
from tests.test_bad_input_38 import BASE

PRICED = BASE.replace("hardware: h100-sxm", "hardware: {from: h100-sxm, usd_per_gpu_hour: 2.5}")


def _warned(capsys, argv: list[str]) -> list[str]:
    errors._warned.clear()
    capsys.readouterr()
    assert cli.main(argv) == 0
    return [line for line in capsys.readouterr().err.splitlines() if "whole section" in line]


@pytest.mark.parametrize("value, fate, hint", [
    ("h200", "usd_per_gpu_hour takes the catalog value of 'h200'", "--set hardware.from=h200 keeps it"),
    ("{from: h200, memory_capacity_bytes: 1.5e11}", "usd_per_gpu_hour takes the catalog value of 'h200'",
     "--set hardware.from=... changes one key")])
def test_a_catalog_name_over_a_mapping_says_which_fields_it_drops(tmp_path, capsys, value, fate, hint):
    said = _warned(capsys, ["cost", run(tmp_path, PRICED)[1], "--set", f"hardware={value}"])
    assert len(said) == 1 and ": hardware: " in said[0] and fate in said[0] and hint in said[0], said


def test_a_catalog_name_over_a_catalog_name_or_a_kept_field_says_nothing(tmp_path, capsys):
    assert not _warned(capsys, ["cost", run(tmp_path, BASE)[1], "--set", "hardware=h200"])
    path = run(tmp_path, PRICED)[1]
    assert not _warned(capsys, ["cost", path, "--set", "hardware.from=h200"])
    assert not _warned(capsys, ["cost", path, "--set", "hardware=h200", "--set", "hardware.usd_per_gpu_hour=3"])


def test_a_bare_command_named_for_aiconfigurator_is_looked_up_on_path(monkeypatch, tmp_path):
    from mtpsim import peer
    python = tmp_path / "mypython"
    python.write_text("#!/bin/sh\nexit 3\n")
    python.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(peer, "_importable_here", lambda: False)
    for named, said in (("mypython", f"({python}) cannot import aiconfigurator"),
                        ("nosuchpython", "names nosuchpython, which is no command on $PATH")):
        monkeypatch.setenv(peer.PYTHON_ENV, named)
        peer.unavailable.cache_clear()
        assert said in peer.unavailable()
    peer.unavailable.cache_clear()


def test_a_stopped_run_gives_back_the_folders_it_made_above_its_own(tmp_path, monkeypatch, capsys):
    from mtpsim import run as run_module
    monkeypatch.setattr(run_module, "simulate", _stop)
    monkeypatch.chdir(tmp_path)
    argv = run(tmp_path, BASE)
    (tmp_path / "kept").mkdir()
    for out, gone, stays in (("p/q/r", "p", None), ("kept/q/r", "kept/q", "kept")):
        assert cli.main([*argv[:2], "--out", out]) == 130
        assert not (tmp_path / gone).exists() and (stays is None or (tmp_path / stays).is_dir())
    assert cli.main(argv[:2]) == 130 and not (tmp_path / "runs").exists()


def _stop(*args, **kwargs):
    raise KeyboardInterrupt


def test_a_stopped_profile_gives_back_the_folders_it_made_above_its_own(tmp_path):
    from mtpsim.outputs import staged
    with pytest.raises(KeyboardInterrupt), staged(tmp_path / "a" / "b" / "profile"):
        raise KeyboardInterrupt
    assert not (tmp_path / "a").exists() and tmp_path.is_dir()
