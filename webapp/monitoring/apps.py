"""App config for the Prometheus metrics: hooks the LLM call observer in every process (the web
server and each ``db_worker``), where the calls happen."""

from __future__ import annotations

from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    name = "webapp.monitoring"
    label = "monitoring"
    verbose_name = "Monitoring"

    def ready(self) -> None:
        from ace_core.llm.observe import add_call_observer
        from webapp.monitoring import checks  # noqa: F401 - registers the settings check
        from webapp.monitoring.metrics import observe_llm_call

        add_call_observer(observe_llm_call)
