"""Benchmarks: ``kbaudit bench NAME``. Each module measures what production runs (the audit's own
stage chain) and prints its figures; ``--json FILE`` writes them as one flat object.

Evaluation data is never part of the project: a bench takes its data folder as an argument, or
finds it under the folder that ``$KBAUDIT_DATA`` names (the layout of the evaluation data set:
``scifact/``, ``vitaminc/``, ``fever/``, ``docsdrift/``...).
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "KBAUDIT_DATA"


def data_path(*parts: str) -> str:
    """``$KBAUDIT_DATA/<parts>`` as a default for a bench's data argument; "" when the variable
    is unset, so that the bench asks for the argument instead of guessing a folder."""
    root = os.environ.get(DATA_ENV)
    return str(Path(root, *parts)) if root else ""
