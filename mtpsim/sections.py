"""What every scenario section shares: the strict frozen base model (mtpsim/schema.py's sections
and the workload's, mtpsim/workload_schema.py) and the value types they read (file references,
probabilities)."""
from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from mtpsim.errors import ScenarioError, short


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("must name a file or catalog entry, not be empty or blank (leave the key out for the default)")
    return text


def _a_name(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty or blank (leave the key out for the default)")
    if not text.isprintable():  # a name is printed in one-line headers and errors
        raise ValueError("must be one line of printable characters (no newline, tab or control character)")
    return text


def _printable_text(text: str) -> str:
    if not all(c.isprintable() or c in "\n\t" for c in text):  # echoed on the terminal as it is
        raise ValueError("must be printable text: no control character (an escape sequence would reach the terminal)")
    return text


# a file path or catalog name: never empty or blank (`profile: ""` would otherwise read as the default)
Ref = Annotated[str, Field(max_length=4096), AfterValidator(_not_blank)]
# any other name a key gives (a release, a shipped curve, a profile): never blank, for the same reason
Name = Annotated[str, Field(max_length=200), AfterValidator(_a_name)]  # printed in one-line headers and errors
# a catalog entry's name as a scenario may write it (catalog.py looks names up by this rule): a
# plain file stem, so it never reaches outside its catalog folder
CATALOG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def is_catalog_name(text: str) -> bool:
    """Whether `text` is a name a catalog entry could have (and a lookup by it stays in its folder)."""
    return bool(CATALOG_NAME.fullmatch(text)) and ".." not in text


def _a_catalog_name(text: str) -> str:
    if not is_catalog_name(text):
        raise ValueError(f"{text[:60]!r} is not a catalog name (letters, digits, '.', '-', '_', '+'; no '/' or '..'): "
                         "a scenario could never name it")
    return text


CatalogName = Annotated[str, Field(max_length=200), AfterValidator(_a_catalog_name)]
# free text printed with the results (a scenario's question): lines and tabs, no control characters
Text = Annotated[str, AfterValidator(_printable_text)]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]  # an error names the entry: acceptance.per_depth.2



class Frozen:
    """A validated record refuses a change as the one-line error bad input gets (pydantic's frozen
    check raises its own ValidationError): a scenario's values were checked together, against
    the catalog entries they resolved; one changed alone could break what they were checked for.
    Private attributes (`_specs`, set by validation) pass."""

    def __setattr__(self, name: str, value) -> None:
        if name.startswith("_"):
            super().__setattr__(name, value)
            return
        raise ScenarioError(type(self).__name__, name, f"cannot be changed to {short(value, 40)}: a validated "
                            "scenario (and each of its sections and specs) is frozen; set it in the file, or with "
                            "mtpsim.load(path, sets=['key.path=value'])")

    def __delattr__(self, name: str) -> None:
        if name.startswith("_"):
            super().__delattr__(name)
            return
        raise ScenarioError(type(self).__name__, name, "cannot be deleted: a validated scenario is frozen")


class Section(Frozen, BaseModel):
    """Unknown keys are errors; types are strict (no `true` for 1, no "8" for 8, no 8.0 for an
    integer) and floats finite, so a typo is an error rather than a quietly different number."""

    # a field's docstring is its description in `mtpsim schema` (schema_json.py reads them)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)
