"""Argument validation of the registry (engine/tools/registry.py ``_validate``): it accepts
exactly what jsonschema accepts, and every refusal keeps jsonschema's wording."""

from __future__ import annotations

import random

import jsonschema
import pytest

from engine.tools import registry as T
from engine.tools.registry import REGISTRY, ToolArgumentError

_VALUES = [
    None,
    True,
    False,
    0,
    1,
    -1,
    3,
    20,
    1000,
    1001,
    2**70,
    0.0,
    0.5,
    1.0,
    3.0,
    1.5,
    -0.1,
    float("inf"),
    float("nan"),
    "",
    "a",
    "vector",
    "auto",
    "hybrid",
    "VECTOR",
    "x" * 50_001,
    "ACME/Reports",
    "*",
    [],
    ["a"],
    [""],
    ["a", 1],
    ["a"] * 101,
    [None],
    {},
    {"a": 1},
    (),
    ("a",),
]


def _random_arguments(rng: random.Random, tool) -> dict:
    args = {}
    for name in tool.schema["properties"]:
        if rng.random() < (0.95 if name in tool.schema["required"] else 0.4):
            args[name] = rng.choice(_VALUES)
    if rng.random() < 0.05:
        args["bogus"] = 1
    return args


@pytest.mark.slow
@pytest.mark.parametrize("name", list(REGISTRY))
def test_validation_accepts_exactly_what_jsonschema_accepts(name):
    tool = REGISTRY[name]
    validator = jsonschema.validators.validator_for(tool.schema)(tool.schema)
    rng = random.Random(name)
    accepted = refused = 0
    for _ in range(5000):
        args = _random_arguments(rng, tool)
        try:
            T._validate(tool, args)
        except ToolArgumentError:
            refused += 1
            assert list(validator.iter_errors(args)), args
        else:
            accepted += 1
            assert not list(validator.iter_errors(args)), args
    # a tool without arguments (cancel_index) can only refuse unknown ones: 1 draw in 20
    assert refused > (200 if not tool.schema["properties"] else 250), refused
    if name != "index_status":  # its one argument takes a boolean only
        assert accepted > 5, accepted


@pytest.mark.parametrize(
    "name, args, message",
    [
        (
            "search_chunks",
            {"query": "q", "limit": 0},
            "search_chunks: argument 'limit': 0 is less than the minimum of 1",
        ),
        ("search_chunks", {"query": "q", "mode": "fast"}, "search_chunks: argument 'mode': 'fast' is not one of"),
        ("search_chunks", {"limit": 3}, "search_chunks: argument 'query': 'query' is a required property"),
        ("search_chunks", {"query": "q", "bogus": 1}, "search_chunks: argument 'bogus': Additional properties"),
        ("search", {"query": "q", "vectorWeight": 2}, "search: argument 'vectorWeight': 2 is greater than the maximum"),
        ("search", {"query": "q", "scope": []}, "search: argument 'scope': [] should be non-empty"),
        (
            "get_chunk",
            {"collectionPath": "A", "filePath": "f", "chunkIndex": True},
            "get_chunk: argument 'chunkIndex': True is not of type 'integer'",
        ),
    ],
)
def test_refusals_keep_jsonschemas_wording(name, args, message):
    with pytest.raises(ToolArgumentError) as e:
        T._validate(REGISTRY[name], args)
    assert str(e.value).startswith(message), str(e.value)
