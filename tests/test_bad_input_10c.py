"""A tenth adversarial campaign (user catalogs, measured profiles, the profile cache, and the
commands other than `run`), by class. As in test_bad_input.py: bad input is one stderr line,
exit status 2, naming the file and the dotted key path; legal but odd input is one warning line;
nothing the user wrote is overwritten or deleted."""
from __future__ import annotations

import os

from mtpsim.costs import profile_cache
from tests.test_bad_input_5 import _fresh_warnings, warnings_of  # noqa: F401 (an autouse fixture)

# ------------------------------------------------------------------ 1. the cache deletes only its own entries

def _tiny_profile(tmp_path, text: str = "device: cpu\n"):
    folder = tmp_path / "prof"
    folder.mkdir(exist_ok=True)
    (folder / "meta.yaml").write_text(text)
    return folder


def test_the_cache_never_deletes_a_users_file_in_its_folder(tmp_path, monkeypatch):
    """Before: pruning globbed `profile-*.pickle`, so the user's own `profile-mine3.pickle` in a
    shared MTPSIM_CACHE_DIR was deleted as if it were an old entry."""
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setenv(profile_cache.CACHE_ENV, str(shared))
    mine = [shared / f"profile-mine{i}.pickle" for i in range(10)] + [shared / "profile-0.pickle"]
    for i, path in enumerate(mine):
        path.write_text(f"my data {i}\n")
        os.utime(path, (1_000_000 + i, 1_000_000 + i))  # older than any entry
    folder = _tiny_profile(tmp_path)
    for n in range(profile_cache.MAX_ENTRIES + 3):  # more entries than are kept: pruning runs
        assert profile_cache.cached(folder, (str(n),), lambda n=n: {"n": n}, dict) == {"n": n}
    assert all(path.read_text().startswith("my data") for path in mine)
    entries = [p for p in shared.iterdir() if profile_cache.ENTRY_NAME.fullmatch(p.name)]
    assert len(entries) == profile_cache.MAX_ENTRIES  # its own entries are still pruned
