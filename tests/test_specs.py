"""Specs as typed facts: OpenAPI, JSON Schema and config files, in two tagged releases.

The fixture is a real git repository built with the git CLI: an OpenAPI spec and a YAML config
at v1.0.0 and v2.0.0, and a KB page written against v1.0.0.
"""

from __future__ import annotations

import json
from datetime import date

import pytest
from test_git_sources import make_repo, release

from kb.chain import run_audit
from kb.config import Settings
from kb.evidence.sources import load_sources
from kb.evidence.specs import spec_document
from kb.verify.specfacts import judge_spec_fact

TODAY = date(2025, 6, 1)

OPENAPI_V1 = """openapi: 3.0.3
info: {title: Billing, version: 1.0.0}
paths:
  /v2/invoices:
    get:
      summary: List invoices
      parameters:
        - $ref: '#/components/parameters/PageSize'
        - name: status
          in: query
          schema: {type: string, enum: [draft, open, paid]}
    post:
      summary: Create an invoice
      requestBody:
        content:
          application/json:
            schema:
              type: object
              required: [amount]
              properties:
                amount: {type: integer, minimum: 1}
  /v2/invoices/{id}:
    delete:
      summary: Delete an invoice
components:
  parameters:
    PageSize:
      name: page_size
      in: query
      description: Invoices per page
      schema: {type: integer, default: 20, minimum: 1, maximum: 100}
"""
OPENAPI_V2 = (OPENAPI_V1.replace("default: 20, minimum: 1, maximum: 100", "default: 50, minimum: 1, maximum: 200")
              .replace("  /v2/invoices/{id}:\n    delete:\n      summary: Delete an invoice\n", ""))  # fmt: skip
CONFIG_V1 = "server:\n  timeout: 30\nuploads:\n  max_size_mb: 10\n"
CONFIG_V2 = "server:\n  timeout: 60\nuploads:\n  max_size_mb: 10\n"

KB_PAGE = """---
title: Billing API
updated: 2024-01-10
---
# Billing API

The `page_size` parameter of `GET /v2/invoices` has a default of 20.

The `page_size` parameter of `GET /v2/invoices` has a maximum of 100.

The `DELETE /v2/invoices/{id}` operation deletes an invoice.

The `server.timeout` setting has a default of 30.

The `uploads.max_size_mb` setting has a default of 10.

The `status` parameter of `GET /v2/invoices` is one of draft, open, paid.

Listing invoices returns 20 invoices per page by default.
"""


def test_openapi_facts_name_the_spec_path():
    errors = []
    doc = spec_document(OPENAPI_V1.encode(), "api/openapi.yaml", "api/openapi.yaml", errors)
    assert errors == []
    facts = [b.text for b in doc.blocks if b.kind == "list_item"]
    assert ("page_size parameter of GET /v2/invoices (Invoices per page): in query, type integer, default 20, minimum 1, "
            "maximum 100, optional (paths./v2/invoices.get.parameters.page_size).") in facts  # fmt: skip
    assert (
        "status parameter of GET /v2/invoices: in query, type string, one of draft, open, paid, optional (paths./v2/invoices.get.parameters.status)."
        in facts
    )
    assert (
        "amount field in the body of POST /v2/invoices: type integer, minimum 1, required (paths./v2/invoices.post.requestBody.properties.amount)."
        in facts
    )
    assert "DELETE /v2/invoices/{id} operation: Delete an invoice (paths./v2/invoices/{id}.delete)." in facts


def test_json_schema_config_files_and_bad_specs(tmp_path):
    (tmp_path / "settings.schema.json").write_text(json.dumps({
        "$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Settings", "type": "object",
        "required": ["region"],
        "properties": {"region": {"type": "string", "enum": ["eu", "us"]}, "retries": {"type": "integer", "default": 3, "maximum": 10}},
    }))  # fmt: skip
    (tmp_path / "app.toml").write_text("[cache]\nttl = 300\n")
    (tmp_path / "app.ini").write_text("[smtp]\nport = 587\n")
    (tmp_path / ".env").write_text("# local\nLOG_LEVEL=info\n")
    (tmp_path / "broken.yaml").write_text("a: [1, 2\n")
    (tmp_path / "refs.yaml").write_text(
        "openapi: 3.1.0\npaths:\n  /x:\n    get:\n      parameters:\n        - $ref: '#/components/parameters/Nope'\n"
    )
    sources, errors = load_sources(tmp_path, today=TODAY)
    text = {s.source_id: " | ".join(b.text for b in s.blocks) for s in sources}
    assert {s.source_kind for s in sources} == {"spec"}
    assert "region property of Settings: type string, one of eu, us, required ($.properties.region)." in text["settings.schema.json"]
    assert "retries property of Settings: type integer, default 3, maximum 10, optional" in text["settings.schema.json"]
    assert "cache.ttl setting in app.toml: default 300 (cache.ttl)." in text["app.toml"]
    assert "smtp.port setting in app.ini: default 587" in text["app.ini"]
    assert "LOG_LEVEL setting in .env: default info" in text[".env"]
    messages = {e.path: e.error for e in errors}
    assert messages["broken.yaml"].startswith("spec does not parse:")
    assert "missing $ref '#/components/parameters/Nope'" in messages["refs.yaml"]


def test_a_json_schema_whose_root_points_into_its_definitions_is_read_there(tmp_path):
    """Schema generators put the schema under ``$defs`` and point the root at it, or compose it
    with ``allOf``; an empty config file states nothing and is no error."""
    (tmp_path / "config.schema.json").write_text(json.dumps({
        "$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": "#/$defs/Configuration",
        "$defs": {
            "Configuration": {"type": "object", "properties": {
                "theme": {"type": "string", "default": "light"}, "log": {"$ref": "#/$defs/Log"}}},
            "Log": {"type": "object", "properties": {"level": {"type": "string", "enum": ["info", "debug"]}}},
        },
    }))  # fmt: skip
    (tmp_path / "taskfile.schema.json").write_text(json.dumps({
        "$schema": "http://json-schema.org/draft-07/schema", "title": "Taskfile",
        "allOf": [{"type": "object", "properties": {"method": {"type": "string", "default": "checksum"}}}],
    }))  # fmt: skip
    (tmp_path / "overrides.toml").write_text("# overrides for the next environment\n")
    sources, errors = load_sources(tmp_path, today=TODAY)
    text = {s.source_id: " | ".join(b.text for b in s.blocks) for s in sources}
    assert "theme property of Configuration: type string, default light, optional ($.properties.theme)." in text["config.schema.json"]
    assert "log.level property of Configuration: type string, one of info, debug, optional" in text["config.schema.json"]
    assert (
        "method property of Taskfile: type string, default checksum, optional ($.allOf.0.properties.method)."
        in text["taskfile.schema.json"]
    )
    assert "overrides.toml" not in text and errors == []


@pytest.fixture()
def billing(tmp_path):
    repo = make_repo(tmp_path)
    release(repo, "v1.0.0", "2024-01-10", {"api/openapi.yaml": OPENAPI_V1, "config/app.yaml": CONFIG_V1})
    release(repo, "v2.0.0", "2024-09-01", {"api/openapi.yaml": OPENAPI_V2, "config/app.yaml": CONFIG_V2})
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "billing.md").write_text(KB_PAGE)
    return repo, kb


def test_spec_releases_against_a_kb_page(billing):
    repo, kb = billing
    settings = Settings(docs=kb, sources=[f"git:{repo}@tags"], depth="D0", today=TODAY, full=True).validate()
    result = run_audit(settings)
    verdicts = {c.source_text: v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    label = {k: v.label for k, v in verdicts.items()}
    why = {k: (v.label, v.rationale, v.action) for k, v in verdicts.items()}
    assert label["The page_size parameter of GET /v2/invoices has a default of 20."] == "stale", why
    assert label["The page_size parameter of GET /v2/invoices has a maximum of 100."] == "stale", why
    assert label["The server.timeout setting has a default of 30."] == "stale", why
    removed = verdicts["The DELETE /v2/invoices/{id} operation deletes an invoice."]
    assert removed.label == "stale" and removed.action.startswith("removed in v2.0.0"), why
    assert label["The uploads.max_size_mb setting has a default of 10."] == "supported", why
    assert label["The status parameter of GET /v2/invoices is one of draft, open, paid."] == "supported", why
    # a prose claim finds page_size's default through retrieval and is judged on it
    assert label["Listing invoices returns 20 invoices per page by default."] == "stale", why
    # the rationale names the spec file, the spec path and the value
    stale = verdicts["The page_size parameter of GET /v2/invoices has a default of 20."]
    assert "api/openapi.yaml" in stale.rationale and stale.evidence_value == "50" and stale.claim_value == "20"
    assert "spec paths./v2/invoices.get.parameters.page_size: default is 50, the claim says 20" in stale.rationale
    assert "paths./v2/invoices.get.parameters.page_size" in (stale.evidence_sentence or "")


PAGE_SIZE = ("page_size parameter of GET /v2/invoices (Invoices per page): in query, type integer, default 50, minimum 1, "
             "maximum 200, optional (paths./v2/invoices.get.parameters.page_size).")  # fmt: skip
STATUS = "status parameter of GET /v2/invoices: in query, type string, one of draft, open, paid, optional (paths./v2/invoices.get.parameters.status)."


@pytest.mark.parametrize("claim, relation, values", [
    ("The page_size parameter of GET /v2/invoices has a default of 20.", "refutes", ("20", "50")),
    ("The page_size parameter of GET /v2/invoices has a maximum of 200.", "supports", (None, None)),
    ("page_size defaults to 50 and is optional.", "supports", (None, None)),
    ("page_size is required.", "refutes", ("required", "optional")),
    ("page_size accepts at least 5 items.", "refutes", ("5", "1")),
    ("The page_size parameter of POST /v2/payments has a default of 20.", None, None),  # another operation
    ("Pages hold 50 invoices.", None, None),  # does not name it: left to the other tiers
])  # fmt: skip
def test_spec_fact_rules(claim, relation, values):
    j = judge_spec_fact(claim, PAGE_SIZE)
    if relation is None:
        assert j is None
        return
    assert (j.relation, (j.claim_value, j.evidence_value)) == (relation, values), j
    assert "paths./v2/invoices.get.parameters.page_size" in j.rationale


def test_spec_fact_rules_enums_and_operations():
    assert judge_spec_fact("The status parameter of GET /v2/invoices is one of draft, open, paid.", STATUS).relation == "supports"
    j = judge_spec_fact("The status parameter of GET /v2/invoices is one of draft, open, paid, or void.", STATUS)
    assert (j.relation, j.claim_value) == ("refutes", "void")
    op = "DELETE /v2/invoices/{id} operation: Delete an invoice (paths./v2/invoices/{id}.delete)."
    assert judge_spec_fact("Call DELETE /v2/invoices/{id} to delete an invoice.", op).relation == "supports"
    assert judge_spec_fact("Call DELETE /v2/invoices/{id} or GET /v2/x.", op) is None
