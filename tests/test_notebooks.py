"""Every notebook in notebooks/ runs top to bottom (from the repo root), and is committed clean."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_notebooks_are_numbered_and_open_with_their_question():
    assert [p.name[:3] for p in NOTEBOOKS] == ["01-", "02-", "03-", "04-"]
    for path in NOTEBOOKS:
        first = nbformat.read(path, as_version=4).cells[0]
        assert first.cell_type == "markdown" and "Question" in first.source, path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path):
    book = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in book.cells if c.cell_type == "code")


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path):
    book = nbformat.read(path, as_version=4)
    NotebookClient(book, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
