"""aiconfigurator-core's kernel database as mtpsim reads it: the systems it covers, where a
family's table is for an engine and version, and a table's own rows.

NVIDIA's aiconfigurator-core (Apache-2.0, https://github.com/ai-dynamo/aiconfigurator) ships
kernel timings its collectors measured on real GPUs under TensorRT-LLM, SGLang and vLLM, as
parquet tables under `aiconfigurator_core/systems/data/<system>/<family>/<backend>/<version>/`.
- Versions: the backend's `current` version in the package's query_versions.yaml unless one is
  given; a family that version lacks is filled from the newest older version that has it
  (never a newer one).
- Foreign rows: a folder may hold rows collected under another framework, version or device.
  Only rows whose framework, version and device match the folder and system are kept.
pandas + pyarrow; torch-free.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from mtpsim.errors import ScenarioError

PACKAGE = "aiconfigurator-core"
PINNED = "0.12.0"  # the release the converter was written against (pyproject extra aiconfigurator)


@dataclass(frozen=True)
class System:
    """An aiconfigurator system: the device name its rows carry and the mtpsim hardware entry."""

    device: str
    hardware: str


SYSTEMS = {
    "h100_sxm": System("NVIDIA H100 80GB HBM3", "h100-sxm"),
    "h200_sxm": System("NVIDIA H200", "h200"),
    "b200_sxm": System("NVIDIA B200", "b200"),
    "a100_sxm": System("NVIDIA A100-SXM4-80GB", "a100-80g"),
    "gb200": System("NVIDIA GB200", "gb200"),
    "gb300": System("NVIDIA GB300", "gb300"),
    "b300_sxm": System("NVIDIA B300 SXM6 AC", "b300"),
}
BACKENDS = ("sglang", "trtllm", "vllm")


@dataclass(frozen=True)
class Table:
    """One measured table: which file, and the version it came from."""

    family: str        # the database's folder (gemm, attention, mla, moe, comm)
    file: str
    version: str


def package_root() -> Path:
    """The installed aiconfigurator_core's systems folder, or a clear error saying how to get it."""
    try:
        import aiconfigurator_core
    except ImportError:
        raise ScenarioError("--from aiconfigurator", "", f"needs {PACKAGE}: pip install 'mtpsim[aiconfigurator]'") from None
    return Path(aiconfigurator_core.__file__).resolve().parent / "systems"


def installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return "unknown"


# ----------------------------------------------------------------------------- versions

def version_key(v: str):
    """Sortable form of an engine version (1.3.0rc20, 0.5.6.post2, 2.29.2)."""
    from packaging.version import InvalidVersion, Version
    try:
        return (1, Version(v))
    except InvalidVersion:
        return (0, v)


def current_version(root: Path, system: str, backend: str) -> str:
    """The backend's `current` queryable version for `system` (query_versions.yaml)."""
    path = root / "query_versions.yaml"
    try:
        table = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError(str(path), "", f"cannot read: {exc}") from None
    slot = (table.get("overrides") or {}).get(system, {}).get(backend) or (table.get("defaults") or {}).get(backend)
    if not slot or not slot.get("current"):
        raise ScenarioError(str(path), f"defaults.{backend}.current", "no current version")
    return str(slot["current"])


def find_table(data: Path, family: str, backend: str, file: str, version: str) -> Table | None:
    """`file` from `version`, else from the newest older version that has it (backward fill)."""
    folder = data / family / backend
    if not folder.is_dir():
        return None
    have = [p.name for p in folder.iterdir() if (p / file).is_file()]
    older = [v for v in have if version_key(v) <= version_key(version)]
    if not older:
        return None
    return Table(family, file, max(older, key=version_key))


# ----------------------------------------------------------------------------- reading

def read_table(data: Path, backend: str, t: Table, device: str, framework: str | None = None) -> tuple[pd.DataFrame, int]:
    """A table's rows from its framework, version and device only; (rows, foreign rows dropped)."""
    path = data / t.family / backend / t.version / t.file
    df = pd.read_parquet(path)
    keep = df["device"] == device
    if "framework" in df.columns and framework is not None:
        keep &= df["framework"].str.lower() == framework.lower()
    if "version" in df.columns:
        keep &= df["version"].astype(str) == t.version
    return df[keep].reset_index(drop=True), int((~keep).sum())
