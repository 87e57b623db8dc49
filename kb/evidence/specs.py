"""Machine-readable specs as typed facts: OpenAPI 3.x, JSON Schema, config files.

Each spec file becomes one source (``source_kind='spec'``) whose text is one fact sentence per
operation, parameter, property or setting, written so that the retriever and the rules tier
read it like any documentation sentence, and naming where in the spec it comes from:

- OpenAPI: "`GET /v2/invoices` operation: List invoices (paths./v2/invoices.get)." and, for
  each parameter (``$ref`` resolved), "`page_size` parameter of `GET /v2/invoices` (Invoices
  per page): in query, type integer, default 20, minimum 1, maximum 200, optional
  (paths./v2/invoices.get.parameters.page_size)."; request body properties likewise ("field in
  the body of"); ``deprecated: true`` adds "deprecated". An operation gone from a newer version of
  the spec is a removed fact there (kb/verify/policy.py, "removed in").
- JSON Schema (``$schema`` or ``type: object`` with ``properties``): each property with its type,
  default, enum ("one of a, b"), limits and required.
- Config files (YAML, TOML, JSON, INI, ``.env``): each leaf setting, "`server.timeout` in
  `config.yaml`: default 30 (server.timeout)." (as "`server.timeout` setting in ...") (a shipped config file's values are the defaults).
  Multi-document YAML and Kubernetes manifests are examples, not settings: skipped silently.

Bad input is an ``IngestError`` row and the file is skipped (unparsable) or the one fact is
(a ``$ref`` that does not resolve, an external ``$ref``).
"""

from __future__ import annotations

import configparser
import json
import posixpath
import tomllib

import yaml

from kb.ingest.parse import ParseError, parse_document
from kb.records import Document, IngestError

KIND = "spec"
# libyaml's loader where PyYAML was built with it: the pure-Python one takes seconds on a large
# reference file, and every version of it is read
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SPEC_SUFFIXES = frozenset({".yaml", ".yml", ".json", ".toml", ".ini", ".cfg", ".env"})
METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
MAX_FACTS = 20_000


def is_spec_path(path: str) -> bool:
    name = posixpath.basename(path).lower()
    return name == ".env" or name.endswith(".env") or posixpath.splitext(name)[1] in SPEC_SUFFIXES


class _Example(Exception):
    """A YAML file that is an example to apply (manifests), not a spec or a configuration."""


def _load(raw: bytes, path: str):
    text = raw.decode("utf-8")
    name = posixpath.basename(path).lower()
    suffix = posixpath.splitext(name)[1]
    if name == ".env" or name.endswith(".env"):
        out = {}
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, _, value = line.removeprefix("export ").partition("=")
            out[key.strip()] = value.strip().strip("'\"")
        return out
    if suffix == ".json":
        return json.loads(text)
    if suffix == ".toml":
        return tomllib.loads(text)
    if suffix in (".ini", ".cfg"):
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(text)
        return {s: dict(parser[s]) for s in parser.sections()}
    docs = list(yaml.load_all(text, Loader=_YAML_LOADER))
    if len(docs) > 1:
        raise _Example("multi-document YAML")
    data = docs[0] if docs else None
    if isinstance(data, dict) and "apiVersion" in data and "kind" in data:
        raise _Example("a Kubernetes manifest")
    return data


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (dict, list)):
        return json.dumps(v, ensure_ascii=False, sort_keys=True)
    return str(v)


class _Facts:
    def __init__(self, rel: str, where: str, errors: list[IngestError]):
        self.rel, self.where, self.errors = rel, where, errors
        self.lines: list[str] = []

    def heading(self, text: str, level: int = 2) -> None:
        self.lines += ["", "#" * level + " " + text, ""]

    def fact(self, text: str) -> None:
        if len(self.lines) < MAX_FACTS:
            self.lines.append("- " + text)

    def error(self, message: str) -> None:
        self.errors.append(IngestError(self.where, "sources", message))


def _resolve(doc: dict, node, facts: _Facts, at: str, seen=()):
    """A ``$ref`` followed inside the document (None, reported, when it does not resolve)."""
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#/"):
            facts.error(f"external $ref {ref!r} at {at} is not followed: skipped")
            return None
        if ref in seen:
            facts.error(f"circular $ref {ref!r} at {at}: skipped")
            return None
        seen = (*seen, ref)
        target = doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                facts.error(f"missing $ref {ref!r} at {at}: skipped")
                return None
            target = target[part]
        node = target
    return node


def _schema_traits(schema: dict) -> list[str]:
    out = []
    kind = schema.get("type")
    if kind:
        out.append(f"type {'/'.join(kind) if isinstance(kind, list) else kind}")
    if schema.get("format"):
        out.append(f"format {schema['format']}")
    if "default" in schema:
        out.append(f"default {_value(schema['default'])}")
    if isinstance(schema.get("enum"), list):
        out.append("one of " + ", ".join(_value(v) for v in schema["enum"]))
    for key, word in (("minimum", "minimum"), ("maximum", "maximum"), ("exclusiveMinimum", "greater than"),
                      ("exclusiveMaximum", "less than"), ("minLength", "at least"), ("maxLength", "at most"),
                      ("minItems", "at least"), ("maxItems", "at most")):  # fmt: skip
        if key in schema and not isinstance(schema[key], bool):
            unit = " characters" if "Length" in key else (" items" if "Items" in key else "")
            out.append(f"{word} {_value(schema[key])}{unit}")
    if schema.get("deprecated"):
        out.append("deprecated")
    return out


def _describe(text) -> str:
    text = " ".join(str(text or "").split())
    return f" ({text.rstrip('.')})" if text else ""


def _openapi(doc: dict, facts: _Facts) -> None:
    facts.heading(f"{facts.rel}: OpenAPI {doc.get('openapi')}", 1)
    paths = doc.get("paths") or {}
    if not isinstance(paths, dict):
        facts.error("OpenAPI paths is not a mapping: no operations read")
        return
    for route, item in paths.items():
        item = _resolve(doc, item, facts, f"paths.{route}")
        if not isinstance(item, dict):
            continue
        shared = item.get("parameters") or []
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            name = f"{method.upper()} {route}"
            at = f"paths.{route}.{method}"
            facts.heading(name)
            summary = " ".join(str(op.get("summary") or op.get("description") or "").split()).rstrip(".")
            facts.fact(f"`{name}` operation{': ' + summary if summary else ''}"
                       f"{', deprecated' if op.get('deprecated') else ''} ({at}).")  # fmt: skip
            for raw in [*shared, *(op.get("parameters") or [])]:
                param = _resolve(doc, raw, facts, f"{at}.parameters")
                if not isinstance(param, dict) or not param.get("name"):
                    continue
                schema = _resolve(doc, param.get("schema") or {}, facts, f"{at}.parameters.{param['name']}") or {}
                traits = [f"in {param.get('in', 'query')}", *_schema_traits(schema)]
                if param.get("deprecated") and "deprecated" not in traits:
                    traits.append("deprecated")
                traits.append("required" if param.get("required") else "optional")
                facts.fact(f"`{param['name']}` parameter of `{name}`{_describe(param.get('description'))}: "
                           f"{', '.join(traits)} ({at}.parameters.{param['name']}).")  # fmt: skip
            body = _resolve(doc, op.get("requestBody") or {}, facts, f"{at}.requestBody") or {}
            for media, content in (body.get("content") or {}).items():
                schema = _resolve(doc, (content or {}).get("schema") or {}, facts, f"{at}.requestBody.{media}") or {}
                _properties(doc, schema, facts, f"field in the body of `{name}`", f"{at}.requestBody")
                break  # one media type is enough: they describe the same body


def _properties(doc: dict, schema: dict, facts: _Facts, owner: str, at: str, prefix: str = "", depth: int = 0) -> None:
    if depth > 6 or not isinstance(schema, dict):
        return
    required = set(schema.get("required") or [])
    for prop, sub in (schema.get("properties") or {}).items():
        sub = _resolve(doc, sub, facts, f"{at}.properties.{prop}")
        if not isinstance(sub, dict):
            continue
        key = f"{prefix}{prop}"
        traits = _schema_traits(sub) + ["required" if prop in required else "optional"]
        facts.fact(f"`{key}` {owner}{_describe(sub.get('description'))}: {', '.join(traits)} ({at}.properties.{key}).")
        if sub.get("type") == "object" or "properties" in sub:
            _properties(doc, sub, facts, owner, at, prefix=f"{key}.", depth=depth + 1)


def _json_schema(doc: dict, facts: _Facts) -> None:
    # generators often put the schema itself under $defs and point the root at it
    # ({"$ref": "#/$defs/Configuration", "$defs": {...}})
    root = _resolve(doc, doc, facts, "$")
    if not isinstance(root, dict):
        return
    ref = doc.get("$ref")
    named = ref.rsplit("/", 1)[-1] if isinstance(ref, str) else ""  # "#/$defs/Configuration"
    title = str(doc.get("title") or root.get("title") or named or facts.rel)
    facts.heading(f"{facts.rel}: JSON Schema {title}", 1)
    _properties(doc, root, facts, f"property of `{title}`", "$")
    parts = root.get("allOf")
    for k, part in enumerate(parts if isinstance(parts, list) else []):  # every part holds for the whole
        part = _resolve(doc, part, facts, f"$.allOf.{k}")
        if isinstance(part, dict):
            _properties(doc, part, facts, f"property of `{title}`", f"$.allOf.{k}")


def _config(data, facts: _Facts) -> None:
    facts.heading(f"{facts.rel}: configuration", 1)

    def walk(node, path: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{path}.{k}" if path else str(k))
        elif path:
            facts.fact(f"`{path}` setting in `{facts.rel}`: default {_value(node)} ({path}).")

    walk(data, "")


def spec_document(raw: bytes, rel: str, where: str, errors: list[IngestError]) -> Document | None:
    """The facts of one spec or config file as a parsed document; None (reported) when the file
    does not parse or holds no facts."""
    facts = _Facts(rel, where, errors)
    try:
        data = _load(raw, rel)
    except _Example:
        return None  # examples (Kubernetes manifests, multi-document YAML) state no settings
    except (UnicodeDecodeError, ValueError, yaml.YAMLError, tomllib.TOMLDecodeError, configparser.Error) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:120]
        facts.error(f"spec does not parse: {first}")
        return None
    if isinstance(data, dict) and str(data.get("openapi", "")).startswith("3"):
        _openapi(data, facts)
    elif not data:
        return None  # an empty file (or only comments) states nothing: nothing to read, nothing lost
    elif isinstance(data, dict) and ("$schema" in data or (data.get("type") == "object" and "properties" in data)):
        _json_schema(data, facts)
    elif isinstance(data, (dict, list)):
        _config(data if isinstance(data, dict) else {"[]": data}, facts)
    if not any(line.startswith("- ") for line in facts.lines):
        facts.error("spec holds no facts (no operations, properties or settings): skipped")
        return None
    text = "\n".join(facts.lines).strip() + "\n"
    try:
        return parse_document(text.encode("utf-8"), rel, rel + ".facts.md")
    except ParseError as exc:  # cannot happen for generated Markdown; reported all the same
        facts.error(f"spec facts unreadable: {exc}")
        return None
