"""The README's Python blocks run, so they cannot rot.

The pytest example runs as a real pytest session in a subprocess, under pytest-asyncio's
default strict mode and outside this repository's configuration, against the real fake
server: it passes with the patch, and fails with it removed (the example must test the
library). The other blocks run each in a fresh interpreter.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
PYTEST_BLOCKS = [b for b in BLOCKS if "async def test_" in b]
OTHER_BLOCKS = [b for b in BLOCKS if b not in PYTEST_BLOCKS]


def test_the_readme_has_its_examples() -> None:
    assert len(PYTEST_BLOCKS) == 1
    assert len(OTHER_BLOCKS) >= 4
    assert README.index("pip install adk-live-resume") < README.index("scripts/dev.py")


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
    proc = _pytest(tmp_path, PYTEST_BLOCKS[0])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "1 passed" in proc.stdout


@pytest.mark.e2e
@pytest.mark.timeout(150)
def test_the_pytest_example_fails_without_the_patch(tmp_path: Path) -> None:
    source = PYTEST_BLOCKS[0].replace(", live_resume_patch)", ")")
    assert source != PYTEST_BLOCKS[0]
    proc = _pytest(tmp_path, source)
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "1 failed" in proc.stdout


@pytest.mark.timeout(120)
@pytest.mark.parametrize("index", range(len(OTHER_BLOCKS)))
def test_every_other_python_block_runs(index: int, tmp_path: Path) -> None:
    source = OTHER_BLOCKS[index]
    compile(source, f"README block {index}", "exec")
    script = tmp_path / "block.py"
    script.write_text(source, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
