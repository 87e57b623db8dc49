"""Shell commands in code blocks are claims: a repository renamed in an install command, a
subcommand renamed in an example, is drift a reader copies into a terminal."""

from __future__ import annotations

import pytest

from kb.ingest.commands import command_lines, generic_step, is_shell
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
    assert command_lines([("make build", 0), ("make test", 11)]) == []
    assert [t for t, _ in command_lines([("$ make build", 0), ("ok", 13)])] == ["make build"]


def _lines(block: str) -> list[tuple[str, int]]:
    out, at = [], 0
    for line in block.split("\n"):
        out.append((line, at))
        at += len(line) + 1
    return out


def test_continuations_heredocs_and_prompts_as_shells_write_them():
    bash = "git reset --hard HEAD^\ngit push origin main\ncat <<EOF > app.conf\nIt's a config file\nlisten 80;\nEOF\npip install a \\"
    assert [t for t, _ in command_lines(_lines(bash), "bash")] == ["git reset --hard HEAD^", "git push origin main", "pip install a"]
    cmd = "choco install widget ^\n  --yes\ncd C:\\\ndir /s /b"
    assert [t for t, _ in command_lines(_lines(cmd), "bat")] == ["choco install widget --yes", "cd C:\\", "dir /s /b"]
    console = "(venv) $ pip install x\nuser@host:~/src$ apt install thing\n% brew install y\n$ docker run \\\n>   --rm -it \\\n>   ubuntu:22.04\noutput"
    assert [t for t, _ in command_lines(_lines(console), "console")] == [
        "pip install x", "apt install thing", "brew install y", "docker run --rm -it ubuntu:22.04",
    ]  # fmt: skip


def test_a_command_is_located_at_its_own_block_not_at_an_earlier_mention():
    page = (
        "Install\n=======\n\n.. The old way: pip install widget\n\n.. code-block:: yaml\n\n    - run: pip install widget\n\n"
        "Run it yourself:\n\n.. code-block:: bash\n   :caption: Install\n   :linenos:\n\n    pip install widget\n\nThe prose after.\n"
    )
    doc = parse_document(page.encode(), "install.rst", "install.rst")
    [(text, written)] = _commands(doc)
    command = next(b for b in doc.blocks if b.kind == "command")
    assert text == written == "pip install widget"
    assert page.rfind("pip install widget") == command.start  # the bash block's line, not the comment's or the YAML's
    assert "The prose after." in [b.text for b in doc.blocks]


def test_a_myst_code_block_directive_is_a_code_block():
    page = "# Install\n\n```{code-block} bash\n:caption: Install\npip install widget --pre\n```\n\n```{code-block} python\nimport widget\n```\n"
    doc = parse_document(page.encode(), "install.md", "install.md")
    assert [text for text, _ in _commands(doc)] == ["pip install widget --pre"]


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


CONTRIBUTING_OLD = (
    "# Contributing\n\nClone the repository and move into it:\n\n```bash\ngit clone https://github.com/acme/widget\n"
    "cd widget\n```\n\nRun the test suite while developing:\n\n```bash\nwidget run dev\n```\n\n"
    "When you are done, push your branch:\n\n"
    "```bash\ngit push origin my-branch\n```\n"
)
CONTRIBUTING_NEW = (
    "# Contributing\n\nClone the repository and move into it:\n\n```bash\ngit clone https://github.com/acme/widget\n"
    "cd widget-src\n```\n\nRun the test suite while developing:\n\n```bash\nwidget test\n```\n\n"
    "When you are done, open a pull request.\n"
)


@pytest.mark.parametrize(
    ("command", "generic"),
    [
        ("cd my-project", True),
        ("mkdir my-project && cd my-project", True),
        ("git push origin main", True),
        ("git add ./*", True),
        ("conda activate docs", True),
        ("source .venv/bin/activate", True),
        (".venv\\Scripts\\activate", True),
        ("sudo mkdir -p /etc/widget", True),
        ("firefox _build/html/index.html", True),
        ("git clone https://github.com/acme/widget", False),
        ("cd widget && pip install -e .", False),
        ("widget run dev", False),
        ("conda install -c conda-forge widget", False),
    ],
)
def test_generic_shell_steps_are_told_from_the_projects_own_commands(command, generic):
    assert generic_step(command) is generic


def test_a_project_command_gone_from_the_docs_is_stale(tmp_path):
    history = two_releases(tmp_path, {"docs/contributing.md": CONTRIBUTING_OLD}, {"docs/contributing.md": CONTRIBUTING_NEW})
    result = audit_releases(history, tmp_path / "cache")
    verdicts = {c.source_text: v for c in result.claims for v in result.verdicts if v.claim_id == c.claim_id}
    assert verdicts["widget run dev"].label == "stale"
    assert verdicts["git clone https://github.com/acme/widget"].label == "supported"


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
    assert [t for t, _ in command_lines(code, "bash")] == [
        "echo \"it's done\"  # don't worry",
        "Set-ExecutionPolicy RemoteSigned -Scope CurrentUser",
        "SSL_CERT_FILE=/etc/ca.crt python -c 'import widget'",
    ]


def test_a_fence_indented_inside_a_list_item_is_code_not_the_items_text():
    page = "# Steps\n\n1. Install it:\n\n    ```bash\n    pip install widget\n    ```\n\n2. Run it once.\n"
    doc = parse_document(page.encode(), "steps.md", "steps.md")
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("heading", "Steps"), ("list_item", "Install it:"), ("command", "pip install widget"), ("list_item", "Run it once."),
    ]  # fmt: skip


def test_an_interactive_programs_screen_in_a_shell_block_holds_no_command():
    """A block without prompts that shows an interactive question ("? Select a project") is what
    the terminal displays: its wrapped message lines are no commands."""
    screen = [
        ('? Found multiple projects that run browser tests in headed mode: "chromium", "firefox".', 0),
        ("Vitest cannot run multiple headed browsers at the same time. Select a single project", 90),
        ('to run or cancel and run tests with "headless: true" option. Note that you can also', 180),
        ("start tests with --browser=name or --project=name flag. › - Use arrow-keys.", 270),
        ("❯   chromium", 350),
    ]
    assert command_lines(screen, "shell") == []
    prompted = [("$ npm create vite@latest", 0), ("? Project name: › my-app", 30), ("✔ Select a framework: › Vue", 60)]
    assert [t for t, _ in command_lines(prompted, "shell")] == ["npm create vite@latest"]
