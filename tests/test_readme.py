"""The README's quickstart and the pages whose examples are complete programs run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: docs pages whose python blocks run as written (each block on its own; they write only to temporary directories)
RUNNABLE_DOCS = [ROOT / "docs" / "expressions.md"]


def run_blocks(path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)
    assert blocks, f"{path.name} has no python block"
    for block in blocks:
        exec(compile(block, str(path), "exec"), {})


def test_readme_quickstart_runs():
    run_blocks(README)


@pytest.mark.parametrize("page", RUNNABLE_DOCS, ids=lambda p: p.name)
def test_docs_examples_run(page):
    run_blocks(page)
