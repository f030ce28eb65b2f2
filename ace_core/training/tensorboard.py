"""TensorBoard event files beside ``metrics.jsonl``: ``tensorboard --logdir runs/`` shows every run.

:class:`TensorBoardSink` writes each :class:`~ace_core.events.MetricsEvent` as scalars under the
same namespaced tags (``losses/qf1_loss``, ``charts/SPS``, ``llm/...``) at the same step (env steps),
in ``<run dir>/tensorboard/``. It is a sink of its own so that any other sink can be composed
with it (:func:`with_tensorboard`, over :class:`~ace_core.events.TeeSink`).

torch's ``SummaryWriter`` needs the ``tensorboard`` package; it is imported on the first metrics
event only, so commands that never train (``--help``, ``envs``, ``evaluate``) do not pay for it.

A resumed run writes again the steps after its checkpoint: the writer is opened with
``purge_step`` at its first step, so TensorBoard hides the stale points a crashed attempt left
(as a resume drops them from ``metrics.jsonl``, :mod:`ace_core.training.resume`).
"""

from __future__ import annotations

from pathlib import Path

from ace_core.events import Event, EventSink, MetricsEvent, NullSink, TeeSink

TENSORBOARD_DIR = "tensorboard"
FLUSH_SECONDS = 10
"""how often buffered scalars reach the file while a run goes on (TensorBoard polls the files)"""


class TensorBoardSink(NullSink):
    """Writes metrics as TensorBoard scalars; every other event is ignored."""

    def __init__(self, run_dir: Path) -> None:
        self.log_dir = Path(run_dir) / TENSORBOARD_DIR
        self._writer = None

    def emit(self, event: Event) -> None:
        if not isinstance(event, MetricsEvent):
            return
        if self._writer is None:
            self._writer = _open_writer(self.log_dir, purge_step=event.step)
        for tag, value in event.values.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                self._writer.add_scalar(tag, float(value), global_step=event.step)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def _open_writer(log_dir: Path, purge_step: int):
    from torch.utils.tensorboard import SummaryWriter  # lazy: ~0.2 s and the tensorboard package

    log_dir.mkdir(parents=True, exist_ok=True)
    return SummaryWriter(log_dir=str(log_dir), purge_step=purge_step, flush_secs=FLUSH_SECONDS)


def with_tensorboard(sink: EventSink, run_dir: Path) -> TeeSink:
    """``sink`` plus TensorBoard files in ``run_dir``; ``sink`` still answers should_stop and
    is_approved. Closing the returned sink closes both."""
    if isinstance(sink, TeeSink) and any(isinstance(s, TensorBoardSink) for s in sink.others):
        return sink  # already writing TensorBoard files: never twice
    return TeeSink(sink, TensorBoardSink(run_dir))
