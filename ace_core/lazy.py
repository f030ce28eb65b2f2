"""Names a package gives from its modules, each module imported on the first use of one of its
names (PEP 562's module ``__getattr__``).

A package that gathers its modules' names for its callers would otherwise import every module
with itself: the web process, which imports the live grid's actions and states and the sessions'
services, would load grid2op and torch at start for the few names that simulate or recommend.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_names(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: each name of ``homes`` read from its module (imported
    then, and kept in the package's namespace), any other name an ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        try:
            home = homes[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(import_module(home), name)
        setattr(import_module(package), name, value)
        return value

    return __getattr__
