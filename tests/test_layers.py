"""kb/ is the Prefect-free core: nothing in it may import Prefect, tasks, flows or reports."""

import ast
from pathlib import Path

FORBIDDEN = ("prefect", "tasks", "flows", "reports")
KB = Path(__file__).resolve().parent.parent / "kb"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_kb_does_not_import_prefect_or_outer_layers():
    offenders = {
        str(path.relative_to(KB.parent)): sorted(_imports(path) & set(FORBIDDEN))
        for path in KB.rglob("*.py")
        if _imports(path) & set(FORBIDDEN)
    }
    assert list(KB.rglob("*.py")), "kb/ has no modules?"
    assert offenders == {}
