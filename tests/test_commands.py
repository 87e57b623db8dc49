"""Shell commands in code blocks are claims: a repository renamed in an install command, a
subcommand renamed in an example, is drift a reader copies into a terminal."""

from __future__ import annotations

import pytest

from kb.ingest.commands import command_lines, is_shell
from kb.ingest.parse import parse_document
from tests.test_git_sources import audit_releases, two_releases

MARKDOWN = """# Install

Install the development version from the repository:

```bash
# the newest commit
python -m pip install --upgrade https://github.com/acme/widget/archive/main.tar.gz
```

```console
$ widget serve --port 8080 \\
    --reload
Serving on port 8080
$ widget --version
```

```
plain text with no prompt stays out
```

```python
import widget
widget.serve(port=8080)
```

```sh [npm]
npm install --save-dev widget
```

> ```shell
> widget check --strict
> ```
"""

RST = """Install
=======

Install it::

    $ python -m pip install widget
    Collecting widget

.. code-block:: bash

    widget build --out site/ \\
      --clean

.. code-block:: python

    import widget

The prose after the code is still read.
"""


def _commands(doc):
    return [(b.text, doc.text[b.start : b.end]) for b in doc.blocks if b.kind == "command"]


def test_markdown_shell_blocks_give_one_block_per_command():
    doc = parse_document(MARKDOWN.encode(), "install.md", "install.md")
    assert [text for text, _ in _commands(doc)] == [
        "python -m pip install --upgrade https://github.com/acme/widget/archive/main.tar.gz",
        "widget serve --port 8080 --reload",
        "widget --version",
        "npm install --save-dev widget",
        "widget check --strict",
    ]
    joined = dict(_commands(doc))["widget serve --port 8080 --reload"]
    assert joined.startswith("widget serve --port 8080 \\") and joined.endswith("--reload"), joined
    prose = [b.text for b in doc.blocks if b.kind != "command"]
    assert not any("import widget" in t or "Serving on" in t or "plain text" in t for t in prose), prose


def test_rst_literal_and_code_blocks_give_commands_and_the_prose_after_them_stays():
    doc = parse_document(RST.encode(), "install.rst", "install.rst")
    assert [text for text, _ in _commands(doc)] == ["python -m pip install widget", "widget build --out site/ --clean"]
    assert "The prose after the code is still read." in [b.text for b in doc.blocks]


@pytest.mark.parametrize(
    ("info", "shell"),
    [("bash", True), ("{code-block} console", True), ("sh [npm]", True), ("bash:no-line-numbers", True), ("", None),
     ("python", False), ("yaml title=config.yaml", False)],
)  # fmt: skip
def test_the_info_string_names_the_language(info, shell):
    assert is_shell(info) is shell


def test_a_block_without_prompts_and_without_a_language_holds_no_command():
    assert command_lines([("make build", 0), ("make test", 11)], prompted_only=True) == []
    assert [t for t, _ in command_lines([("$ make build", 0), ("ok", 13)], prompted_only=True)] == ["make build"]


OLD_PAGE = (
    "# Install\n\nInstall the development version from the repository of the project:\n\n"
    "```bash\npython -m pip install --upgrade https://github.com/acme/widget/archive/main.tar.gz\n"
    "widget init --template minimal\n```\n\nThe widget server listens on port 8080 unless told otherwise.\n"
)
NEW_PAGE = OLD_PAGE.replace("acme/widget/archive", "acme/widget-cli/archive")


def test_a_command_whose_repository_was_renamed_is_stale_with_the_new_command_as_evidence(tmp_path):
    history = two_releases(tmp_path, {"docs/install.md": OLD_PAGE}, {"docs/install.md": NEW_PAGE})
    result = audit_releases(history, tmp_path / "cache")
    verdicts = {c.source_text: v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    moved = verdicts["python -m pip install --upgrade https://github.com/acme/widget/archive/main.tar.gz"]
    assert moved.label == "stale", moved
    assert "acme/widget-cli/archive" in (moved.evidence_sentence or ""), moved
    # the drafted correction is the newest command, in place of the old one in the code block
    edits = [e for e in result.edits if e.claim_id == moved.claim_id]
    assert [e.new_text for e in edits] == ["python -m pip install --upgrade https://github.com/acme/widget-cli/archive/main.tar.gz"], edits
    assert verdicts["widget init --template minimal"].label == "supported"
    assert verdicts["The widget server listens on port 8080 unless told otherwise."].label == "supported"


def test_output_data_and_strings_over_lines_are_no_commands():
    code = [
        ("echo '[goreleaser]", 0),
        ("gpgcheck=0' | sudo tee /etc/yum.repos.d/goreleaser.repo", 20),
        ("CLIENT_TRAFFIC_SECRET_0 XXXX", 80),
        (">> pytest -m 'not slow'", 110),
        ("echo \"it's done\"  # don't worry", 140),
        ("Set-ExecutionPolicy RemoteSigned -Scope CurrentUser", 180),
        ("SSL_CERT_FILE=/etc/ca.crt python -c 'import widget'", 240),
    ]
    assert [t for t, _ in command_lines(code)] == [
        "echo \"it's done\"  # don't worry",
        "Set-ExecutionPolicy RemoteSigned -Scope CurrentUser",
        "SSL_CERT_FILE=/etc/ca.crt python -c 'import widget'",
    ]
