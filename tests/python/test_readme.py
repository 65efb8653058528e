"""The README's Python example runs as written (from the repository root) and prints the original
pipeline's shape."""
import ast
import contextlib
import io
import os
import re

from conftest import ROOT


def test_readme_python_example(monkeypatch):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert blocks, "README.md has no ```python block"
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], "README.md", "exec"), {})
    printed = ast.literal_eval(out.getvalue().strip().splitlines()[0])
    assert set(printed) == {"output"}
    assert any(item["span"] == "李克强" for path in printed["output"] for item in path)
