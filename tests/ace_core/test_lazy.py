"""A package's names, each module imported on the first use of one of its names."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ace_core.lazy import lazy_names


def test_a_name_loads_its_module_on_first_use_and_stays():
    source = """
import sys
import ace_core.live as live
before = "ace_core.live.what_if_step" in sys.modules
what_if = live.what_if
print(before, "ace_core.live.what_if_step" in sys.modules, "what_if" in vars(live), what_if is live.what_if)
"""
    shown = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["False", "True", "True", "True"]


def test_every_name_of_a_lazy_package_is_its_modules_own():
    from importlib import import_module

    import ace_core.live as live

    for name, home in live._HOMES.items():
        assert getattr(live, name) is getattr(import_module(home), name), name
    assert sorted(live.__all__) == sorted(live._HOMES)


@pytest.mark.parametrize("package", ["ace_core.live", "webapp.operations.services"])
def test_no_name_of_a_lazy_package_is_also_one_of_its_modules(package):
    """Importing a module sets the package's attribute of its name to the module: a name that is
    also a module's would read as the module once something imported it."""
    import pkgutil
    from importlib import import_module

    names = set(import_module(package).__all__)
    modules = {info.name for info in pkgutil.iter_modules(import_module(package).__path__)}
    assert names and modules and not names & modules


def test_an_unknown_name_is_an_attribute_error_naming_the_package():
    getter = lazy_names("ace_core.live", {"state_delta": "ace_core.live.states"})
    with pytest.raises(AttributeError, match="module 'ace_core.live' has no attribute 'nothing'"):
        getter("nothing")
    import ace_core.live as live

    with pytest.raises(ImportError, match="cannot import name 'nothing'"):
        exec("from ace_core.live import nothing", {})
    assert not hasattr(live, "nothing")
