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


# values that the input readers refuse, each in its own way
QUERY_PROBES = ("", "nope", "-1", "0001-01-01", "20261016", "9" * 40)
BODY_PROBES = (b"nope", b"[]", b'{"unknown": 1}', b"x" * (65 * 1024))
DATE_PROBES = ("nope", "20261016", "0001-01-01", "1990-01-01")


async def test_every_status_a_bad_input_gets_is_documented(tmp_path: Path) -> None:
    """Drift between the document and the input readers: each route is sent a bad body, bad
    body dates and bad query values, and whatever status comes back must be listed."""
    async with open_api(tmp_path) as api:
        _, document = await api.get("/api/v1/openapi.json", role=None)
        client = api.app.test_client()
        headers = api.headers("admin")
        seen: set[tuple[str, str, int]] = set()
        for path, operations in document["paths"].items():
            url = re.sub(r"{\w+}", "1", path.replace("{job}", "extract"))
            for method, operation in operations.items():
                listed = {int(status) for status in operation["responses"]}
                parameters = operation["parameters"]
                requests: list[tuple[str, dict]] = []
                if method in ("post", "put", "delete"):
                    requests += [(url, {"data": probe}) for probe in BODY_PROBES]
                body = operation.get("requestBody", {}).get("content", {})
                fields = body.get("application/json", {}).get("schema", {}).get("properties", {})
                for name, schema in fields.items():
                    if schema.get("format") == "date":
                        requests += [(url, {"json": {name: probe}}) for probe in DATE_PROBES]
                streams = operation["responses"].get("200", {}).get("content", {})
                if "text/event-stream" not in streams:  # a good value there never ends
                    for parameter in parameters:
                        if parameter["in"] == "query":
                            requests += [
                                (url, {"query_string": {parameter["name"]: probe}})
                                for probe in QUERY_PROBES
                            ]
                for target, kw in requests:
                    response = await client.open(
                        target, method=method.upper(), headers=headers, **kw
                    )
                    status = response.status_code
                    assert status in listed, (method, path, kw, status, sorted(listed))
                    seen.add((method, path, status))
        # the probes reach the refusals the defects were about
        assert ("post", "/api/v1/jobs/{job}/hold", 400) in seen
        assert ("get", "/api/v1/runs", 422) in seen
        assert ("post", "/api/v1/jobs/{job}/trigger", 422) in seen


async def test_the_event_stream_declares_last_event_id(tmp_path: Path) -> None:
    async with open_api(tmp_path) as api:
        _, document = await api.get("/api/v1/openapi.json", role=None)
        parameters = document["paths"]["/api/v1/events"]["get"]["parameters"]
        headers = {p["name"]: p for p in parameters if p["in"] == "header"}
        assert headers["Last-Event-ID"]["schema"] == {
            "type": "integer",
            "minimum": 0,
            "maximum": 2**63 - 1,
        }


def _query_schema(document: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    (found,) = [
        p["schema"] for p in document["paths"][path]["get"]["parameters"] if p["name"] == name
    ]
    return found


async def test_the_documents_value_rules_are_what_the_server_accepts(tmp_path: Path) -> None:
    """A client generated from the document sends what the server accepts: each rule the
    document states (a date's years, a limit's bounds, the states, a version's digits, a token
    name) lets through exactly the values the server takes, at and around its edges."""
    async with open_api(tmp_path) as api:
        _, document = await api.get("/api/v1/openapi.json", role=None)

        date_rule = _query_schema(document, "/api/v1/runs", "date")
        for text in ("1899-12-31", "1900-01-01", "2026-10-16", "9000-12-31", "9001-01-01"):
            status, _ = await api.get("/api/v1/runs", query_string={"date": text})
            assert (status == 200) == bool(re.fullmatch(date_rule["pattern"], text)), text

        limit_rule = _query_schema(document, "/api/v1/runs", "limit")
        for value in (0, 1, limit_rule["maximum"], limit_rule["maximum"] + 1):
            status, _ = await api.get("/api/v1/runs", query_string={"limit": str(value)})
            fits = limit_rule["minimum"] <= value <= limit_rule["maximum"]
            assert (status == 200) == fits, value

        log_path = "/api/v1/runs/{run_id}/attempts/{attempt}/log"
        offset_rule = document["paths"][log_path]["get"]["parameters"]
        (offset_rule,) = [p["schema"] for p in offset_rule if p["name"] == "offset"]
        status, run = await api.post("/api/v1/jobs/extract/trigger", {})
        assert status == 201
        await api.settle()
        log_of_run = f"/api/v1/runs/{run['run_id']}/attempts/1/log"
        for value in (offset_rule["maximum"], offset_rule["maximum"] + 1):
            status, body = await api.get(log_of_run, query_string={"offset": str(value)})
            fits = value <= offset_rule["maximum"]
            # taken: on to the file, which the fake launcher never wrote (404); refused: 400
            assert (status == 404) == fits, (value, body)

        states = _query_schema(document, "/api/v1/runs", "state")["enum"]
        assert "succeeded" in states
        for state in [*states, "bogus"]:
            status, _ = await api.get("/api/v1/runs", query_string={"state": state})
            assert (status == 200) == (state in states), state
        assert _query_schema(document, "/api/v1/runs", "job")["minLength"] == 1
        assert (await api.get("/api/v1/runs", query_string={"job": ""}))[0] == 400

        version_rule = _query_schema(document, "/api/v1/config/diff", "to")["pattern"]
        for text in ("abcde", "abcdef", "ABCDEF0", "abcdeg"):
            status, _ = await api.get(f"/api/v1/config/versions/{text}")
            assert (status == 404) == bool(re.fullmatch(version_rule, text)), text  # 400 if not

        body = document["paths"]["/api/v1/tokens"]["post"]["requestBody"]["content"]
        name_rule = body["application/json"]["schema"]["properties"]["name"]["pattern"]
        for name in ("", "-x", "ok.name", "x" * 64, "x" * 65):
            status, _ = await api.post("/api/v1/tokens", {"name": name, "role": "viewer"})
            assert (status == 201) == bool(re.fullmatch(name_rule, name)), name
