"""A calibration profile's meta.yaml: its schema (ProfileMeta: the device, its peak rates and
latency ceilings, the launch and host figures, the families it holds), reading it once per file
version, and what it names (the device a profile was measured on, the engine whose kernels it
times). The tables beside it are profile.py's.
"""
from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mtpsim.designs import DESIGNS
from mtpsim.engine_schema import EngineKind
from mtpsim.errors import ScenarioError, from_validation
from mtpsim.files import load_yaml, read_once
from mtpsim.limits import MAX_DEVICE_LATENCY_S, MAX_DEVICE_RATE, MAX_USERS, MIN_DEVICE_RATE
from mtpsim.specs import Dtype
from mtpsim.textfiles import not_a_file


def measured_on(meta: dict) -> str:
    """The hardware catalog entry a profile's meta.yaml names: its `hardware` (what `mtpsim
    calibrate` writes on a GPU), else its `device` (cpu, or a converted profile's entry)."""
    return str(meta.get("hardware") or meta["device"])


def timed_engine(meta: dict) -> str | None:
    """The serving engine whose kernels a profile times (meta.yaml `engine`: a converted
    profile's); None for a profile calibrated here, which times mtpsim's own torch ops."""
    engine = meta.get("engine")
    return str(engine) if engine is not None else None


RELEASE_TEXT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,39}")  # what a header prints of a profile's own words


def kernels_release(meta: dict) -> str | None:
    """`<engine> <release>` whose kernels a converted profile timed (its source's framework_version):
    kernel speed is that release's whatever engine.version a scenario names, which sets the
    scheduling rules only. None for a profile calibrated here (mtpsim's own torch ops), and for
    words a one-line header cannot print as they are (a user's meta.yaml with a newline, escape
    codes or a page of text: bad-input campaign 33b)."""
    source, engine = meta.get("source"), timed_engine(meta)
    version = source.get("framework_version") if isinstance(source, dict) else None
    words = [str(w) for w in (engine, version) if isinstance(w, (str, int, float)) and not isinstance(w, bool)]
    return " ".join(words) if len(words) == 2 and all(RELEASE_TEXT.fullmatch(w) for w in words) else None


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, allow_inf_nan=False, frozen=True)


class _Ceilings(_Strict):
    """The measured streaming and matmul rates, within the device range a hardware entry allows."""

    copy_bytes_per_s: float = Field(ge=MIN_DEVICE_RATE, le=MAX_DEVICE_RATE)
    matmul_flops_per_s: float = Field(ge=MIN_DEVICE_RATE, le=MAX_DEVICE_RATE)


Latency = Annotated[float, Field(ge=0, le=MAX_DEVICE_LATENCY_S)]


class _Launch(_Strict):
    """What launching an op costs beyond its measured time. CPU profiles: dispatch is inside op
    times (`call_s` per call); GPU profiles: launch, in-graph kernel and graph replay seconds
    added by the cost model. (Host time per iteration is `host_s`, a separate figure.)"""

    included_in_op_times: bool
    call_s: Latency | None = None
    launch_s: Latency | None = None
    graph_kernel_s: Latency | None = None
    graph_replay_s: Latency | None = None

    @model_validator(mode="after")
    def _what_the_model_reads(self) -> _Launch:
        need = ("call_s",) if self.included_in_op_times else ("launch_s", "graph_kernel_s", "graph_replay_s")
        missing = [k for k in need if getattr(self, k) is None]
        if missing:
            raise ValueError(f"{missing[0]}: required key is missing")
        return self


class ProfileMeta(_Strict):
    """The meta.yaml keys the cost model reads, typed; other keys (provenance, timing notes,
    attribution) are kept as they are."""

    model_config = ConfigDict(extra="allow")
    device: str
    device_name: str
    date: str | datetime.datetime | datetime.date
    hardware: str | None = None
    dtype: Dtype | None = None  # the dtype a CPU profile's layer rows were timed in
    ceilings: _Ceilings
    launch: _Launch
    families: dict[str, Annotated[int, Field(ge=1)] | str | dict[str, Any]] | None = None
    attention_kv: Literal["per_request", "batch_max"] | None = None  # what an attention row's kv means (calibrated.py)
    # design -> running batch -> host seconds per iteration, as the verification loop measured them
    host_s: dict[Literal[DESIGNS], dict[Annotated[int, Field(ge=1, le=MAX_USERS)],
                                        Annotated[float, Field(gt=0, le=MAX_DEVICE_LATENCY_S)]]] | None = None
    threads: int | None = Field(default=None, ge=1)  # CPU threads the op times were measured with
    engine: EngineKind | None = None  # the serving engine whose kernels a converted profile times


@read_once
def load_meta(path: Path) -> dict:
    """meta.yaml, checked against ProfileMeta: a missing key or a wrong type names its key path.
    Read once per file version (every sweep point checks its profile's device) and shared: not
    to be changed in place."""
    if not path.is_file():
        raise not_readable(path, "")
    meta = load_yaml(path)
    if not isinstance(meta, dict):
        raise ScenarioError(str(path), "", "meta.yaml must be a mapping")
    if "overhead" in meta and "launch" in meta:  # which one the cost model reads would be a guess
        raise ScenarioError(str(path), "overhead", "the old name of `launch`, which is given too: keep launch")
    if "overhead" in meta and "launch" not in meta:  # the section's name before issue 23
        from mtpsim.errors import warn
        warn(str(path), "overhead", "renamed `launch` (the GPU launch cost; host time is host_s): read as launch")
        meta = {("launch" if k == "overhead" else k): v for k, v in meta.items()}
    try:
        ProfileMeta.model_validate(meta)
    except ValidationError as exc:
        raise from_validation(exc, str(path), data=meta) from None
    return meta


def not_readable(path: Path, what: str) -> ScenarioError:
    """A profile file that is no regular file: missing, or what it is instead (a folder, a pipe,
    a link to a device or to nowhere), which reading it as a table cannot say."""
    why = not_a_file(path)
    return ScenarioError(str(path), "", f"missing profile file{what}" if why == "no such file"
                         else f"{why} (the profile file{what})")
