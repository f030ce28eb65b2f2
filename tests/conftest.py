"""Shared fixtures. Every test gets a private GridACE cache so nothing leaks between runs."""

import os
import warnings
from collections import Counter

import pytest

import ace_core  # noqa: F401  pins torch's CPU kernels before any test runs an op, as every GridACE process does

warnings.filterwarnings("ignore", message=".*numba.*")


def pytest_collection_finish(session: pytest.Session) -> None:
    # pytest-xdist schedules by node id: items sharing one would run as a single test
    counts = Counter(item.nodeid for item in session.items)
    shared = sorted(nodeid for nodeid, count in counts.items() if count > 1)
    if shared:
        raise pytest.UsageError(f"{len(shared)} node ids are shared by several tests, e.g. {shared[0]}")


@pytest.fixture(scope="session", autouse=True)
def _gridace_cache(tmp_path_factory):
    # action spaces are expensive to build: keep one cache for the whole session
    if "GRIDACE_TEST_CACHE_DIR" in os.environ:
        os.environ["GRIDACE_CACHE_DIR"] = os.environ["GRIDACE_TEST_CACHE_DIR"]
    else:
        os.environ.setdefault("GRIDACE_CACHE_DIR", str(tmp_path_factory.mktemp("gridace-cache")))
    yield


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    # one thread is the fastest on this shared 2-core machine, and keeps timings stable
    import torch

    torch.set_num_threads(1)
