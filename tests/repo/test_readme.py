"""The Python blocks of the README and of the documentation site (docs/) run, so they cannot rot.

The pytest example (the README's, which the Quickstart repeats word for word) runs as a real
pytest session in a subprocess, under pytest-asyncio's default strict mode and outside this
repository's configuration, against the real fake server: it passes with the patch, and fails
with it removed (the example must test the library). Every other block runs in a fresh
interpreter.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = {
    str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
}
BLOCKS = {
    f"{name} block {index}": block
    for name, text in PAGES.items()
    for index, block in enumerate(re.findall(r"```python\n(.*?)```", text, re.DOTALL))
}
PYTEST_BLOCKS = {where: b for where, b in BLOCKS.items() if "async def test_" in b}
OTHER_BLOCKS = {where: b for where, b in BLOCKS.items() if b not in PYTEST_BLOCKS.values()}
THE_PYTEST_EXAMPLE = next(b for where, b in PYTEST_BLOCKS.items() if where.startswith("README"))


def test_the_readme_has_its_examples() -> None:
    readme_blocks = [where for where in BLOCKS if where.startswith("README.md")]
    assert len(readme_blocks) >= 3
    assert README.index("pip install adk-live-resume") < README.index("scripts/dev.py")
    assert any(where.startswith("docs/quickstart.md") for where in PYTEST_BLOCKS)


def test_the_pytest_example_is_the_same_everywhere() -> None:
    different = [where for where, b in PYTEST_BLOCKS.items() if b != THE_PYTEST_EXAMPLE]
    assert not different, f"the pytest example differs from the README's in {different}"


def _pytest(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not this repository's configuration
    (tmp_path / "test_from_readme.py").write_text(source, encoding="utf-8")
    options = ["-q", "-p", "no:cacheprovider", "-o", "asyncio_mode=strict"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *options, "test_from_readme.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.e2e
@pytest.mark.timeout(150)
def test_the_pytest_example_passes_with_the_patch_in_strict_mode(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, THE_PYTEST_EXAMPLE)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "1 passed" in proc.stdout


@pytest.mark.e2e
@pytest.mark.timeout(150)
def test_the_pytest_example_fails_without_the_patch(tmp_path: Path) -> None:
    source = THE_PYTEST_EXAMPLE.replace(", live_resume_patch)", ")")
    assert source != THE_PYTEST_EXAMPLE
    proc = _pytest(tmp_path, source)
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "1 failed" in proc.stdout


@pytest.mark.timeout(120)
@pytest.mark.parametrize("where", sorted(OTHER_BLOCKS))
def test_every_other_python_block_runs(where: str, tmp_path: Path) -> None:
    source = OTHER_BLOCKS[where]
    compile(source, where, "exec")
    script = tmp_path / "block.py"
    script.write_text(source, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
