"""One LoRA round of a training run, reported as a FinetuneEvent whatever happens.

A backend that can be fine-tuned here (local) trains a new adapter on the samples; one that cannot
(a server) can get them exported as JSONL for its own fine-tuning, with a log line saying so; a round that fails keeps the previous adapter. Either way the run goes on.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from ace_core.config.sections import FinetuneConfig
from ace_core.events import EventSink, FinetuneEvent
from ace_core.llm.actor import adapter_number
from ace_core.llm.lora import Sample, export_jsonl, finetune

log = logging.getLogger(__name__)


def lora_round(
    llm,
    samples: list[Sample],
    folder: Path,
    config: FinetuneConfig,
    *,
    step: int,
    adapter: str,
    export: bool,
    sink: EventSink,
) -> str | None:
    """Fine-tune ``llm`` on ``samples`` (adapters under ``folder``) and return the new adapter's
    path; None when no adapter was trained (``adapter``, the one in use, stays). ``export``: a
    backend that cannot be fine-tuned here gets the samples as JSONL in ``folder``."""
    if not getattr(llm, "supports_finetuning", False):
        reason = f"{llm.name} cannot be fine-tuned from here"
        path = ""
        if export:
            path = str(export_jsonl(samples, folder / f"samples-step{step:08d}.jsonl"))
            reason += f"; {len(samples)} samples exported to {path} for the server's own fine-tuning"
        log.info("LoRA round skipped: %s", reason)
        sink.emit(FinetuneEvent(step, 0, len(samples), 0.0, None, path, skipped_reason=reason))
        return None
    started = time.perf_counter()
    try:
        result = finetune(llm, samples, folder, config)
    except Exception as error:  # noqa: BLE001 - a failed round keeps the previous adapter
        log.warning("LoRA round failed, keeping the previous adapter: %s", error)
        sink.emit(
            FinetuneEvent(
                step,
                adapter_number(adapter and Path(adapter).name),
                len(samples),
                time.perf_counter() - started,
                None,
                adapter,
                skipped_reason=f"failed: {type(error).__name__}: {error}"[:500],
            )
        )
        return None
    path = str(result.adapter_path)
    sink.emit(
        FinetuneEvent(
            step,
            adapter_number(result.adapter_path.name),
            result.samples,
            result.seconds,
            result.loss_after,
            path,
        )
    )
    return path
