"""`make notebooks`: run every notebook top to bottom from the repo root and save the executed
copies, outputs and figures included, to runs/notebooks/ (the committed notebooks stay without
outputs, as tests/test_notebooks.py requires). Usage: python notebooks/run.py [NAME ...]."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "runs" / "notebooks"


def main(names: list[str]) -> int:
    books = sorted((ROOT / "notebooks").glob("*.ipynb"))
    books = [b for b in books if not names or any(b.name.startswith(n) for n in names)]
    OUT.mkdir(parents=True, exist_ok=True)
    for path in books:
        started = time.perf_counter()
        book = nbformat.read(path, as_version=4)
        NotebookClient(book, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
        nbformat.write(book, OUT / path.name)
        print(f"{path.name}: ran in {time.perf_counter() - started:.0f} s -> {OUT / path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
