import argparse
import importlib
from datetime import date
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from cli.options import params_arguments, params_from
from kb.config import ConfigError, load_settings
from kb.errors import UsageError


def test_precedence_file_then_env_then_flags(tmp_path: Path):
    (tmp_path / "kbaudit.toml").write_text('depth = "D2"\ntop_k = 7\nout = "from-file"\n')
    env = {"KBAUDIT_TOP_K": "9", "KBAUDIT_OUT": "from-env"}
    settings = load_settings({"out": "from-flag", "depth": None}, cwd=tmp_path, environ=env)
    assert settings.depth == "D2"  # file (flag was None)
    assert settings.top_k == 9  # env beats file
    assert settings.out == Path("from-flag")  # flag beats env


def test_pyproject_section_is_read(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.kbaudit]\ntoday = "2025-01-02"\n')
    assert load_settings({}, cwd=tmp_path, environ={}).today == date(2025, 1, 2)


def test_api_key_only_from_environment(tmp_path: Path):
    (tmp_path / "kbaudit.toml").write_text('llm_api_key = "sk-secret"\n')
    with pytest.raises(ConfigError, match="environment"):
        load_settings({}, cwd=tmp_path, environ={})
    settings = load_settings({}, cwd=tmp_path.parent, environ={"KBAUDIT_LLM_API_KEY": "sk-secret"})
    assert "sk-secret" not in repr(settings)
    assert "sk-secret" not in str(settings.public_dict())


@pytest.mark.parametrize(
    "flags, message",
    [
        ({"depth": "D9"}, "depth must be one of"),
        ({"docs": "/nonexistent/kb"}, "documents folder not found"),
        ({"fail_on": "wrong"}, "--fail-on takes labels"),
    ],
)
def test_bad_settings_are_clear_errors(tmp_path: Path, flags, message):
    with pytest.raises(ConfigError, match=message):
        load_settings(flags, cwd=tmp_path, environ={}).validate()


def test_depth_names_map_to_levels(tmp_path: Path):
    assert load_settings({"depth": "strict"}, cwd=tmp_path, environ={}).validate().depth == "D3"


def test_unknown_file_setting_is_rejected(tmp_path: Path):
    (tmp_path / "kbaudit.toml").write_text("tpo_k = 3\n")
    with pytest.raises(ConfigError, match="unknown setting"):
        load_settings({}, cwd=tmp_path, environ={})


def test_object_store_urls_are_refused_clearly_for_docs_and_taken_for_out(tmp_path: Path):
    with pytest.raises(ConfigError, match="not supported yet; mount the bucket"):
        load_settings({"docs": "s3://bucket/kb"}, cwd=tmp_path, environ={})
    settings = load_settings({"out": "memory://bucket/kbaudit"}, cwd=tmp_path, environ={"KBAUDIT_MIRROR": str(tmp_path / "m")})
    assert (settings.out_url, settings.out) == ("memory://bucket/kbaudit", tmp_path / "m")  # tests/test_remote_store.py


def test_unknown_key_names_the_nearest_valid_one_also_in_sections(tmp_path: Path):
    (tmp_path / "kbaudit.toml").write_text("tpo_k = 3\n")
    with pytest.raises(ConfigError, match=r"unknown setting tpo_k; did you mean top_k\? \(in .*kbaudit.toml\)"):
        load_settings({}, cwd=tmp_path, environ={})
    (tmp_path / "kbaudit.toml").write_text("[escalate]\nmax_call = 3\n")
    with pytest.raises(ConfigError, match=r"unknown setting escalate.max_call; did you mean escalate.max_calls\?"):
        load_settings({}, cwd=tmp_path, environ={})


def test_sections_come_from_file_then_environment_with_their_older_names(tmp_path: Path):
    (tmp_path / "kbaudit.toml").write_text(
        '[claims]\nmin_words = 4\n[escalate]\nmax_calls = 200\nexclude_docs = ["legal/*"]\n'
        '[escalate.cove]\nquestions = 2\n[correct]\nauto_accept = ["low", "medium"]\n'
    )
    env = {"KBAUDIT_LLM_MAX_CALLS": "7", "KBAUDIT_ESCALATE_COVE_MODE": "joint", "KBAUDIT_CLAIMS_MIN_WORDS": "5"}
    settings = load_settings({}, cwd=tmp_path, environ=env)
    assert settings.claims.min_words == 5  # environment beats file
    assert (settings.escalate.max_calls, settings.escalate.exclude_docs) == (7, ("legal/*",))
    assert (settings.escalate.cove.questions, settings.escalate.cove.mode) == (2, "joint")
    assert settings.correct.auto_accept == ("low", "medium")
    with pytest.raises(ConfigError, match="bad value for escalate.cove.mode"):
        load_settings({}, cwd=tmp_path, environ={"KBAUDIT_LLM_MODE": "chatty"})


def test_settings_survive_the_json_a_deployment_passes(tmp_path: Path):
    from kb.config import Settings

    settings = load_settings(
        {"depth": "D2", "sources": ["a", "b"], "fail_on": "stale"},
        cwd=tmp_path,
        environ={"KBAUDIT_ESCALATE_THRESHOLD": "0.7", "KBAUDIT_LLM_API_KEY": "sk-x"},
    )
    again = Settings.from_public_dict(settings.public_dict())
    assert again.model_dump() == settings.model_dump()  # every setting but the key, which is never serialised
    assert (again.depth, again.sources, again.fail_on, again.escalate.threshold) == ("D2", [Path("a"), Path("b")], ("stale",), 0.7)


def test_every_run_flag_is_a_setting_and_reaches_it(tmp_path: Path, monkeypatch):
    from cli.main import build_parser
    from cli.options import flag_values
    from kb.config import Settings

    args = build_parser().parse_args(["run", "--depth", "D2", "--full", "--fail-on", "stale,uncertain", "--dask-workers", "3"])
    flags = flag_values(args)
    assert set(flags) <= set(Settings.model_fields) and {"depth", "full", "fail_on", "dask_workers"} <= set(flags)
    settings = load_settings(flags, cwd=tmp_path, environ={})
    assert (settings.depth, settings.full, settings.fail_on, settings.dask_workers) == ("D2", True, ("stale", "uncertain"), 3)
    assert load_settings(flag_values(build_parser().parse_args(["run"])), cwd=tmp_path, environ={"KBAUDIT_FULL": "1"}).full


class _Sample(BaseModel):
    """Parameters of every kind params_arguments knows."""

    source: str = Field(description="a required path")
    count: int = Field(default=5, description="an int with a default")
    limit: int | None = Field(default=None, description="an optional int")
    ratio: float = Field(default=0.5, description="a float")
    mode: Literal["joint", "factored"] = Field(default="joint", description="one of two modes")
    level: Literal[1, 2, 3] = 1
    quiet: bool = Field(default=False, description="a switch")
    data: list[str] = Field(default_factory=list, description="a folder; repeat for more")
    sizes: list[int] = Field(default_factory=list, description="ints, one flag each")
    git: str | None = Field(default=None, description="a value that may be left out", json_schema_extra={"const": "", "metavar": "DIR"})


def _sample_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sample")
    params_arguments(parser, _Sample)
    return parser


def test_params_flags_are_typed_and_left_out_ones_take_the_field_defaults():
    parser = _sample_parser()
    given = params_from(parser.parse_args(["--source", "a.jsonl", "--count", "7", "--limit", "3", "--ratio", "0.25",
                                           "--mode", "factored", "--level", "3", "--quiet"]), _Sample)  # fmt: skip
    assert given == _Sample(source="a.jsonl", count=7, limit=3, ratio=0.25, mode="factored", level=3, quiet=True)
    left_out = params_from(parser.parse_args(["--source", "a.jsonl"]), _Sample)
    assert left_out == _Sample(source="a.jsonl")
    assert (left_out.count, left_out.limit, left_out.mode, left_out.quiet) == (5, None, "joint", False)
    text = parser.format_help()
    assert "--mode {joint,factored}" in text and "--level {1,2,3}" in text and "--count COUNT" in text
    assert "one of two modes" in text and "--quiet " in text and "QUIET" not in text
    listed = params_from(parser.parse_args(["--source", "s", "--data", "a", "--data", "b", "--sizes", "2", "--sizes", "3"]), _Sample)
    assert (listed.data, listed.sizes, listed.git) == (["a", "b"], [2, 3], None)
    assert params_from(parser.parse_args(["--source", "s", "--git"]), _Sample).git == ""
    assert params_from(parser.parse_args(["--source", "s", "--git", "../x"]), _Sample).git == "../x"
    assert "--git [DIR]" in text and "--data DATA" in text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--mode", "chatty"], "argument --mode: invalid choice: 'chatty' (choose from "),  # the list's quoting varies by Python
        (["--level", "4"], "argument --level: invalid choice: 4 (choose from "),
        (["--level", "one"], "argument --level: invalid int value: 'one'"),
        (["--count", "abc"], "argument --count: invalid int value: 'abc'"),
        (["--limit", "1.5"], "argument --limit: invalid int value: '1.5'"),
        (["--ratio", "half"], "argument --ratio: invalid float value: 'half'"),
        (["--sizes", "2", "--sizes", "x"], "argument --sizes: invalid int value: 'x'"),
        ([], "the following arguments are required: --source"),
    ],
)
def test_bad_params_flag_values_are_one_usage_error_line_exit_2(argv, message, capsys):
    parser = _sample_parser()
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args((["--source", "a.jsonl"] if argv else []) + argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("usage: sample") and err[-1].startswith(f"sample: error: {message}")


def test_params_value_the_model_refuses_is_a_usage_error_naming_the_flag():
    class Bounded(BaseModel):
        limit: int = Field(default=10, ge=1)

    parser = argparse.ArgumentParser(prog="bounded")
    params_arguments(parser, Bounded)
    with pytest.raises(UsageError, match=r"^bad value for --limit: 0 \(Input should be greater than or equal to 1\)$"):
        params_from(parser.parse_args(["--limit", "0"]), Bounded)


def test_bench_flags_build_each_bench_s_typed_parameters(capsys):
    from bench import deep, gitload, retrieval, speed
    from cli.main import BENCHES, build_parser

    parser = build_parser()
    args = parser.parse_args(["bench", "deep", "--mode", "factored", "--threshold", "0.7", "--limit", "5", "--no-demo"])
    assert args.bench_module is deep
    assert params_from(args, deep.Params) == deep.Params(mode="factored", threshold=0.7, limit=5, no_demo=True)
    args = parser.parse_args(["bench", "speed", "--claims", "50", "--corpus-extra", "10", "--paths", "minilm"])
    assert params_from(args, speed.Params) == speed.Params(claims=50, corpus_extra=10, paths="minilm")
    args = parser.parse_args(["bench", "retrieval", "--claims", "c.jsonl", "--corpus", "k.jsonl", "--floor-sample", "0.5"])
    assert params_from(args, retrieval.Params) == retrieval.Params(claims="c.jsonl", corpus="k.jsonl", floor_sample=0.5)
    assert params_from(parser.parse_args(["bench", "git", "--kb-pages", "2"]), gitload.Params).kb_pages == 2
    for argv, message in [
        (["bench", "deep", "--mode", "chatty"], "kbaudit bench deep: error: argument --mode: invalid choice: 'chatty'"),
        (["bench", "speed", "--claims", "many"], "kbaudit bench speed: error: argument --claims: invalid int value: 'many'"),
        (["bench", "retrieval", "--corpus", "k.jsonl"], "kbaudit bench retrieval: error: the following arguments are required: --claims"),
    ]:
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args(argv)
        assert exit_.value.code == 2 and capsys.readouterr().err.strip().splitlines()[-1].startswith(message)
    # every bench: one flag per field, nothing else but --json
    required = {"retrieval": ["--claims", "c", "--corpus", "k"], "drift": ["--data", "d"]}
    for name, module_name in BENCHES.items():
        module = importlib.import_module(module_name)
        sub = parser.parse_args(["bench", name, *required.get(name, [])])
        assert set(vars(sub)) - {"verbose", "command", "bench", "func", "bench_module", "json"} == set(module.Params.model_fields), name
