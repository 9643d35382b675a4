"""The `search:` section of a scenario: what `mtpsim search` enumerates (its flags override it).

Every key is optional; None means the default the search picks (layouts.py, space.py): every
divisor of a replica's GPUs the model can be sharded over, `none` plus the scenario's design at
steps 1 up to the most the design, the model and the acceptance allow, and a concurrency ladder of
powers of two. Unknown keys are errors, like every other section's.
"""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from mtpsim.designs import DESIGNS
from mtpsim.textnumbers import first_repeat

LISTS = ("tp", "ep", "attention_dp", "designs", "topk", "concurrency", "rates")  # the values a search tries
MAX_SEARCH_POINTS = 20_000  # past this a search is better split (each point is a simulation)
DEFAULT_LADDER = (1, 2, 4, 8, 16, 32, 64, 128, 256)  # closed-loop users over all replicas

GPUs = Annotated[int, Field(ge=1, le=4096)]


class SearchBounds(BaseModel):
    """Bounds of a deployment search; lists are the values tried (None: the default)."""

    # a field's docstring is its description in `mtpsim schema` (schema_json.py reads them)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    gpus: GPUs | None = None
    """The GPUs to deploy on (--gpus)."""
    tp: list[GPUs] | None = Field(default=None, min_length=1)
    """GPUs per replica to try (None: every divisor that shards)."""
    ep: list[GPUs] | None = Field(default=None, min_length=1)
    """Expert groups per replica to try."""
    attention_dp: list[GPUs] | None = Field(default=None, min_length=1)
    """DP-attention groups per replica to try."""
    designs: list[Literal[DESIGNS]] | None = Field(default=None, min_length=1)
    """Designs to try (None: none and the scenario's)."""
    max_steps: int | None = Field(default=None, ge=1, le=64)
    """Most draft steps to try (None: what the model, acceptance and design allow)."""
    topk: list[Annotated[int, Field(ge=1, le=64)]] = Field(default=[1], min_length=1)
    """Tree widths to try (1: chains)."""
    concurrency: list[Annotated[int, Field(ge=1, le=100_000)]] | None = Field(default=None, min_length=1)
    """Closed-loop users to try (None: the default ladder)."""
    rates: list[Annotated[float, Field(gt=0, le=1e6)]] | None = Field(default=None, min_length=1)
    """Open-loop Poisson rates to try, requests per second (instead of concurrency)."""
    requests_per_user: int = Field(default=3, ge=1, le=1000)
    """Closed loop: requests per point = users x this."""
    requests_per_rate_s: float = Field(default=20.0, gt=0, le=1e5)
    """Open loop: requests per point = rate x this many seconds."""
    disaggregated: bool = False
    """Also try prefill and decode pools (xPyD) of the same GPUs, the ratio matched to the load (search/disagg.py)."""

    _repeated: list = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _once_each(cls, data, handler) -> SearchBounds:
        """A value listed twice would be two identical points (and two frontier rows of one
        index): each is tried once, in the order given, as the flags' lists are; what was
        dropped is kept (`repeated`), for the search to say so."""
        repeats = [(key, twice) for key in LISTS if isinstance(data, dict) and isinstance(data.get(key), list)
                   and (twice := _first_repeat(data[key])) is not None]
        bounds = handler({**data, **{key: _once(data[key]) for key, _ in repeats}} if repeats else data)
        bounds._repeated = repeats
        return bounds

    def repeated(self) -> list[tuple[str, object]]:
        """(key, the first value it listed twice) for each list given with a repeat."""
        return list(self._repeated)

    @model_validator(mode="after")
    def _one_load(self) -> SearchBounds:
        if self.concurrency is not None and self.rates is not None:
            raise ValueError("give concurrency (closed loop) or rates (Poisson), not both")
        return self


def _first_repeat(values: list) -> object | None:
    """The first value `values` holds twice, or None."""
    again = first_repeat(values)
    return None if again is None else values[again]


def _once(values: list) -> list:
    """`values` without repeats, in order (as given where a value is no hashable: validation refuses it)."""
    try:
        return list(dict.fromkeys(values))
    except TypeError:
        return values


def bound_origin(source: str, flags: set[str], key: str) -> tuple[str, str]:
    """(file or flag, key) that gave the search bound `key`: its flag (`max_steps` -> --max-steps)
    where one of `flags` (the bounds the flags gave) names it, else the search section of the
    scenario file `source`."""
    return (f"--{key.replace('_', '-')}", "") if key in flags else (source, f"search.{key}")
