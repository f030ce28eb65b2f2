"""The web app's event sink: what the trainer reports becomes rows and live messages.

Each event is written in its own transaction before :meth:`WebEventSink.emit` returns (so a
killed worker loses nothing it reported), then handed to the background publisher for the
browsers watching. :meth:`should_stop` reads flags the heartbeat thread keeps fresh (no query
per step); :meth:`is_approved` reads a reviewer's decision.
"""

from __future__ import annotations

from ace_core.events import (
    CheckpointEvent,
    EpisodeEvent,
    Event,
    FinetuneEvent,
    MetricsEvent,
    RefinementEvent,
    ShapingEvent,
)
from webapp.live import broadcast, run_messages
from webapp.review import selectors as review_selectors
from webapp.review import services as review_services
from webapp.training.services import events as event_services
from webapp.training.worker.heartbeat import Heartbeat


class WebEventSink:
    def __init__(
        self, *, run_id: int, heartbeat: Heartbeat, publisher: broadcast.BackgroundPublisher
    ) -> None:
        self.run_id = run_id
        self.heartbeat = heartbeat
        self.publisher = publisher
        self.group = broadcast.run_group(run_id)

    def emit(self, event: Event) -> None:
        if isinstance(event, MetricsEvent):
            self._send(
                run_messages.metric_message(event_services.metrics_record(run_id=self.run_id, event=event))
            )
        elif isinstance(event, EpisodeEvent):
            self._send(
                run_messages.episode_message(event_services.episode_record(run_id=self.run_id, event=event))
            )
        elif isinstance(event, CheckpointEvent):
            self._send(
                run_messages.checkpoint_message(
                    event_services.checkpoint_record(run_id=self.run_id, event=event)
                )
            )
        elif isinstance(event, FinetuneEvent):
            self._send(
                run_messages.finetune_message(event_services.finetune_record(run_id=self.run_id, event=event))
            )
        elif isinstance(event, RefinementEvent):
            message = run_messages.refinement_message(
                review_services.refinement_record(run_id=self.run_id, event=event)
            )
            self._send(message)
            self.publisher.send(broadcast.REVIEW_QUEUE_GROUP, message)
        elif isinstance(event, ShapingEvent):
            review_services.shaping_record(run_id=self.run_id, event=event)
        else:
            raise TypeError(
                f"unknown event {type(event).__name__}; accepted: the dataclasses of ace_core.events"
            )

    def should_stop(self) -> bool:
        return self.heartbeat.should_stop

    def is_approved(self, refinement_id: str) -> bool | None:
        return review_selectors.refinement_decision(run_id=self.run_id, refinement_id=refinement_id)

    def _send(self, message: dict) -> None:
        self.publisher.send(self.group, message)
