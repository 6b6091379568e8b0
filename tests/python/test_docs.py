"""Every `python` block of docs/python.md runs as written."""

from __future__ import annotations

import re

import pytest

from fp_python import REPO, run_python, write_script

DOC = REPO / "docs" / "python.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```$", DOC.read_text(), flags=re.M | re.S)


def test_the_guide_has_examples():
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(tmp_path, index):
    script = write_script(tmp_path, BLOCKS[index], name=f"example_{index}.py")
    result = run_python(script, cwd=tmp_path)
    assert result.returncode == 0, f"{BLOCKS[index]}\n{result.stdout}\n{result.stderr}"
    assert result.stdout.strip(), "an example shows what it recorded"
    assert (set(p.suffix for p in tmp_path.iterdir()) & {".db"}), "it wrote a database"
