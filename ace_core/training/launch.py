"""The one way to run a training run: :func:`run`.

The command line (``train``, ``demo``), the ablations, the benchmarks and the web app's worker all
train through it, so a run's directory holds the same files whoever started it: ``checkpoint.pt``
(and ``best.pt``), TensorBoard files in ``tensorboard/``, ``metrics.jsonl`` and ``events.jsonl``
when the caller asks for the logs, and ``summary.json``, written last.
"""

from __future__ import annotations

import json
from pathlib import Path

from ace_core.config import TrainConfig
from ace_core.events import EventSink, JsonlSink, NullSink, TeeSink
from ace_core.kernels import kernels_in_force
from ace_core.training.extensions import ExtensionFactory, extensions_for
from ace_core.training.tensorboard import TensorBoardSink
from ace_core.training.trainer import Trainer, TrainResult
from ace_core.workers import HERE, Workers


def run(
    config: TrainConfig,
    out: Path,
    sink: EventSink | None = None,
    resume: bool = False,
    extensions: ExtensionFactory = extensions_for,
    logs: bool = False,
    workers: Workers = HERE,
) -> TrainResult:
    """Train the run of ``config`` in ``out``, or with ``resume`` continue it from its checkpoint
    (and drop the log lines written after it, which it writes again).

    Everything is built and checked before a file is written, so a bad config or a foreign
    checkpoint leaves ``out`` as it was. ``sink`` hears every event and answers whether to stop
    and whether a refinement is approved; TensorBoard files, and with ``logs`` the JSON lines
    logs of the command line, are written beside. ``extensions`` builds the run's extensions
    (:func:`~ace_core.training.extensions.extensions_for`: those the config asks for).
    ``workers``: where the run's own mines (``pretrain_mine=auto``) and its validations play (Ray
    actors here or on a cluster); the mines, the validations and so the run are the same whatever
    their number and place."""
    out = Path(out)
    trainer = Trainer(config, out, extensions=extensions, workers=workers)
    # opened in append mode: the resume's truncation of the same files, before the first event,
    # leaves the logs as if they had been opened after it
    files = [*([JsonlSink(out)] if logs else []), TensorBoardSink(out)]
    trainer.sink = TeeSink(sink or NullSink(), *files)
    try:
        result = trainer.run(resume=resume)
    finally:
        if trainer.validator:
            trainer.validator.close()
        for file in files:
            file.close()
    write_summary(out, result)
    return result


def write_summary(out: Path, result: TrainResult) -> dict:
    """``summary.json``: written last, so its presence marks a run that finished; with the CPU and
    kernels it ran on (:func:`~ace_core.kernels.kernels_in_force`)."""
    summary = result.as_dict() | {"kernels": kernels_in_force()}
    (Path(out) / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
