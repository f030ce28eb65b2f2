"""Who wants to know about LLM calls: latency and failures, without ace_core knowing who listens.

Backends decorate their public calls with :func:`observed`; a host application (the web app's
Prometheus metrics) registers a callback with :func:`add_call_observer`. Each call reports
``(backend, call, seconds, error)``: ``backend`` is ``local`` or ``openai``, ``call`` is ``chat``
or ``choose``, ``error`` the exception when the call raised (it is raised again unchanged). An
observer that fails is ignored: watching must never break training.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

CallObserver = Callable[[str, str, float, BaseException | None], None]

_observers: list[CallObserver] = []


def add_call_observer(observer: CallObserver) -> None:
    """Report every later LLM call to ``observer`` (once, however often it is added)."""
    if observer not in _observers:
        _observers.append(observer)


def remove_call_observer(observer: CallObserver) -> None:
    if observer in _observers:
        _observers.remove(observer)


def _report(backend: str, call: str, seconds: float, error: BaseException | None) -> None:
    for observer in list(_observers):
        try:
            observer(backend, call, seconds, error)
        except Exception:  # noqa: BLE001 - an observer's bug must not become an LLM failure
            pass


def observed(backend: str) -> Callable:
    """Decorator for a backend method: time it and report it to the observers."""

    def decorate(method: Callable) -> Callable:
        @functools.wraps(method)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                result = method(*args, **kwargs)
            except BaseException as error:
                _report(backend, method.__name__, time.perf_counter() - start, error)
                raise
            _report(backend, method.__name__, time.perf_counter() - start, None)
            return result

        return wrapper

    return decorate
