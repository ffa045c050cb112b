"""The OpenAPI document and the app's routes are the same list."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.web.api_harness import open_api


def refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if "$ref" in node else []
        return found + [r for value in node.values() for r in refs(value)]
    if isinstance(node, list):
        return [r for value in node for r in refs(value)]
    return []


async def test_the_document_lists_exactly_the_routes_the_app_serves(tmp_path: Path) -> None:
    async with open_api(tmp_path) as api:
        status, document = await api.get("/api/v1/openapi.json", role=None)
        assert status == 200
        assert document["openapi"] == "3.1.0"
        documented = {
            (method.upper(), path)
            for path, operations in document["paths"].items()
            for method in operations
        }
        served = {
            (method, re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule))
            for rule in api.app.url_map.iter_rules()
            if rule.endpoint != "static"
            for method in rule.methods or ()
            if method not in ("HEAD", "OPTIONS")
        }
        assert documented == served


async def test_every_reference_resolves_and_path_parameters_are_declared(tmp_path: Path) -> None:
    async with open_api(tmp_path) as api:
        _, document = await api.get("/api/v1/openapi.json", role=None)
        schemas = document["components"]["schemas"]
        for ref in refs(document):
            assert ref.startswith("#/components/schemas/")
            assert ref.rsplit("/", 1)[1] in schemas, ref
        for path, operations in document["paths"].items():
            names = set(re.findall(r"{(\w+)}", path))
            for operation in operations.values():
                declared = {p["name"] for p in operation["parameters"] if p["in"] == "path"}
                assert declared == names, path
                assert operation["responses"], path
                if operation.get("security") != []:
                    assert {"401", "403"} <= set(operation["responses"]), path
