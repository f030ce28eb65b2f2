"""A static-files finder that serves plotly.js from the installed plotly wheel.

The pages draw their charts with plotly.js and must work offline, so the file is served by this
application (as ``vendor/plotly.min.js``), never from a CDN. The wheel already carries it: this
finder exposes that one file to ``collectstatic``, WhiteNoise and the ``{% static %}`` tag
without copying it into the repository.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.checks import CheckMessage, Error
from django.core.files.storage import FileSystemStorage

PLOTLY_DIR = Path(plotly.__file__).parent / "package_data"
PLOTLY_FILE = "plotly.min.js"
PREFIX = "vendor"


class PlotlyFinder(BaseFinder):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.storage = FileSystemStorage(location=PLOTLY_DIR)
        self.storage.prefix = PREFIX

    def check(self, **kwargs: Any) -> list[CheckMessage]:
        if not (PLOTLY_DIR / PLOTLY_FILE).is_file():
            return [Error(f"{PLOTLY_DIR / PLOTLY_FILE} is missing; reinstall the plotly package")]
        return []

    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> str | list[str]:
        if path == f"{PREFIX}/{PLOTLY_FILE}":
            match = str(PLOTLY_DIR / PLOTLY_FILE)
            return [match] if find_all else match
        return [] if find_all else ""

    def list(self, ignore_patterns: list[str] | None) -> Iterator[tuple[str, FileSystemStorage]]:
        yield PLOTLY_FILE, self.storage
