from datetime import date
from pathlib import Path

import pytest

from kb.config import ConfigError, load_settings


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
