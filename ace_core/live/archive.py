"""Zip archives of exported folders (what the console's download serves)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path


def zip_folder(folder: Path, archive_base: Path) -> Path:
    """``folder`` as ``archive_base.zip`` (written through a temporary name)."""
    with tempfile.TemporaryDirectory(dir=archive_base.parent) as tmp:
        made = shutil.make_archive(
            str(Path(tmp) / archive_base.name), "zip", root_dir=folder.parent, base_dir=folder.name
        )
        target = archive_base.with_suffix(".zip")
        Path(made).replace(target)
    return target
