"""App config for the Prometheus metrics.

In every process (the web server and each worker) it hooks the LLM call observer, since LLM calls
are counted where they happen. In a worker process (``db_worker``, ``live_feed``) with
``GRIDACE_METRICS_WORKER_PORT`` set, it also serves that process's own metrics on that port: a
scrape target per worker, the usual Prometheus way for processes in separate containers or
machines (``/metrics`` on the web server shows the web process and the database).
"""

from __future__ import annotations

import logging
import sys

from django.apps import AppConfig

logger = logging.getLogger(__name__)

WORKER_COMMANDS = ("db_worker", "live_feed")


class MonitoringConfig(AppConfig):
    name = "webapp.monitoring"
    label = "monitoring"
    verbose_name = "Monitoring"

    def ready(self) -> None:
        from django.conf import settings

        from ace_core.llm.observe import add_call_observer
        from webapp.monitoring import checks  # noqa: F401 - registers the settings check
        from webapp.monitoring.metrics import observe_llm_call

        add_call_observer(observe_llm_call)
        start_worker_exporter(
            sys.argv, settings.GRIDACE_METRICS_WORKER_PORT, settings.GRIDACE_METRICS_WORKER_ADDR
        )


def start_worker_exporter(argv: list[str], port: int, addr: str) -> bool:
    """Serve this process's metrics on ``addr:port`` when it is a worker and a port is set."""
    if not port or argv[1:2] == [] or argv[1] not in WORKER_COMMANDS:
        return False
    from prometheus_client import start_http_server

    start_http_server(port, addr=addr)
    logger.info("worker metrics on http://%s:%s/metrics", addr, port)
    return True
