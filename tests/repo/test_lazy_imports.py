"""``import adk_live_resume`` and the pytest plugin stay light, and every public name resolves.

Not timed (the machines are noisy; benchmarks/import_cost.py measures the time): each check
runs in a fresh interpreter and looks at what the import put in ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import adk_live_resume
import adk_live_resume.testing

#: What only a live run, a stored handle or telemetry needs: the plugin must not load it.
PLUGIN_MUST_NOT_LOAD = ("google.adk", "google.genai", "cryptography", "opentelemetry")
#: ... nor must `import adk_live_resume`, which must not load the fake server either.
PACKAGE_MUST_NOT_LOAD = (*PLUGIN_MUST_NOT_LOAD, "adk_live_resume.testing")
#: What `import adk_live_resume` must not add to a process that has imported ADK.
AFTER_ADK_MUST_NOT_LOAD = (
    "google.adk.flows",
    "cryptography",
    "opentelemetry",
    "adk_live_resume.testing",
)


def _new_modules(setup: str, statement: str) -> list[str]:
    """The modules that ``statement`` imports in a fresh interpreter after ``setup``."""
    code = (
        f"import json, sys\n{setup}\nbefore = set(sys.modules)\n{statement}\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    modules: list[str] = json.loads(proc.stdout.splitlines()[-1])
    return modules


def _under(prefixes: tuple[str, ...], modules: list[str]) -> list[str]:
    """The ``modules`` that are, or are inside, one of ``prefixes``."""
    return [m for m in modules if m in prefixes or m.startswith(tuple(p + "." for p in prefixes))]


def test_import_adk_live_resume_loads_nothing_heavy() -> None:
    modules = _new_modules("", "import adk_live_resume")
    assert "adk_live_resume" in modules
    assert _under(PACKAGE_MUST_NOT_LOAD, modules) == []


@pytest.mark.timeout(90)
def test_import_after_adk_adds_no_flow_internals_and_install_still_works() -> None:
    modules = _new_modules(
        "import google.adk.agents, google.adk.runners",
        "import adk_live_resume",
    )
    assert "adk_live_resume" in modules
    assert _under(AFTER_ADK_MUST_NOT_LOAD, modules) == []
    # install() imports the loop and what it patches on its first call, and works
    modules = _new_modules(
        "import google.adk.agents, google.adk.runners, adk_live_resume",
        "adk_live_resume.install(); assert adk_live_resume.is_installed()",
    )
    assert "adk_live_resume.shell.loop" in modules


def test_loading_the_pytest_plugin_module_imports_neither_adk_nor_genai_nor_cryptography() -> None:
    modules = _new_modules("", "import adk_live_resume.testing.pytest_plugin")
    assert "adk_live_resume.testing.pytest_plugin" in modules
    assert _under(PLUGIN_MUST_NOT_LOAD, modules) == []


@pytest.mark.timeout(90)
def test_a_pytest_run_loads_the_plugin_light_and_a_fixture_loads_what_it_needs(
    tmp_path: Path,
) -> None:
    # Outside this repository's configuration; the plugin comes from its pytest11 entry point.
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
    )
    (tmp_path / "test_inner.py").write_text(
        "import sys\n\n"
        f"HEAVY = {PLUGIN_MUST_NOT_LOAD!r}\n\n\n"
        "def test_a_run_without_the_fixtures(request):\n"
        "    plugin = request.config.pluginmanager.get_plugin('adk_live_resume')\n"
        "    assert plugin.__name__ == 'adk_live_resume.testing.pytest_plugin'\n"
        "    assert [m for m in sys.modules if m.startswith(HEAVY)] == []\n\n\n"
        "def test_then_a_fixture(live_resume_patch):\n"
        "    import adk_live_resume\n\n"
        "    assert adk_live_resume.installed_policy() is live_resume_patch\n"
        "    assert 'google.adk.flows.llm_flows.base_llm_flow' in sys.modules\n"
    )
    unset = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_ADDOPTS", "PYTEST_PLUGINS"}
    env = {key: value for key, value in os.environ.items() if key not in unset}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_inner.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=80,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "2 passed" in proc.stdout


@pytest.mark.parametrize("package", [adk_live_resume, adk_live_resume.testing])
def test_every_public_name_resolves_and_is_listed(package: types.ModuleType) -> None:
    assert package.__all__
    listed = dir(package)
    for name in package.__all__:
        assert name in listed, name
        value = getattr(package, name)
        assert not isinstance(value, types.ModuleType), name
    star: dict[str, object] = {}
    exec(f"from {package.__name__} import *", star)
    assert set(package.__all__) <= set(star)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        package.no_such_name  # noqa: B018


def test_every_public_name_resolves_in_a_fresh_interpreter() -> None:
    code = (
        "import adk_live_resume, adk_live_resume.testing, sys\n"
        "for package in (adk_live_resume, adk_live_resume.testing):\n"
        "    for name in package.__all__:\n"
        "        value = getattr(package, name)\n"
        "        home = getattr(value, '__module__', None)\n"
        "        if home is not None and home.startswith('adk_live_resume'):\n"
        "            assert getattr(sys.modules[home], name) is value, name\n"
    )
    modules = _new_modules("", code)
    assert "adk_live_resume.launch.flows" in modules  # the lazy names were really loaded
