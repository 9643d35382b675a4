"""The JSON Schema of a scenario file (`mtpsim schema`), each key described by its docstring.

The sections' fields are documented by the string under each (`name: str` then `\"\"\"Used in
output paths.\"\"\"`). pydantic's use_attribute_docstrings would read those strings into every
model's fields as it is built, which parses each class's source at import: ~0.03 s of every
command's start-up (benchmarks/startup.py) for a description only this schema shows. They are
read here instead, when the schema is asked for, into the properties pydantic wrote.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
import typing
from typing import Any

from pydantic import BaseModel

from mtpsim.schema import Scenario


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a scenario file: every key, its type, its default and what it is.
    `model` and `hardware` are catalog names, spec files or mappings (catalog.py's specs; a model
    mapping may read a Hugging Face config.json: `{hf_config: path, ...overrides}`)."""
    schema = Scenario.model_json_schema()
    models = _models(Scenario, {})
    for name, section in [(Scenario.__name__, schema), *schema.get("$defs", {}).items()]:
        docs = field_docstrings(models[name])
        properties = section.get("properties", {})
        for key, prop in properties.items():
            if key in docs and "description" not in prop:  # a Field(description=...) wins, as in pydantic
                properties[key] = dict(sorted({**prop, "description": docs[key]}.items()))  # pydantic sorts its keys
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema, "title": "mtpsim scenario"}


def field_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """Each field's docstring, from the class that declares the field (a subclass's own, else
    the base's that it inherits, as pydantic copies an inherited field's description)."""
    out: dict[str, str] = {}
    for cls in reversed([c for c in model.__mro__ if issubclass(c, BaseModel) and c is not BaseModel]):
        own = cls.__dict__.get("__annotations__", {})
        if own:
            docs = _own_docstrings(cls)
            out.update({name: docs[name] for name in own if name in docs})
            for name in own:
                if name not in docs:
                    out.pop(name, None)  # declared again without one: no description, as in pydantic
    return out


def _own_docstrings(cls: type) -> dict[str, str]:
    """The strings that follow annotated names in the class's source (pydantic's
    _docs_extraction reads them the same way); none where the source is not at hand (an install
    of byte code only), as pydantic then gives none."""
    try:
        body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    except (OSError, TypeError):
        return {}
    return {a.target.id: inspect.cleandoc(b.value.value) for a, b in zip(body, body[1:])
            if isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name) and isinstance(b, ast.Expr)
            and isinstance(b.value, ast.Constant) and isinstance(b.value.value, str)}


def _models(model: type[BaseModel], seen: dict[str, type[BaseModel]]) -> dict[str, type[BaseModel]]:
    """The model and every model its fields hold, by class name (the schema's $defs keys)."""
    seen[model.__name__] = model
    for field in model.model_fields.values():
        for cls in _classes(field.annotation):
            if cls.__name__ not in seen:
                _models(cls, seen)
    return seen


def _classes(annotation) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [c for arg in typing.get_args(annotation) for c in _classes(arg)]
