"""Fixtures for the LLM layer tests; the tiny model and the chat server live in tests/ace_core/conftest.py."""

import pytest


@pytest.fixture
def grid_prompt() -> list[dict]:
    return [
        {"role": "system", "content": "You are a power grid operator assistant."},
        {
            "role": "user",
            "content": "line 4 is overloaded with rho 1.12.\nA split substation 5\nB reconnect line 7\n"
            "C do nothing\nanswer with the letter only:",
        },
    ]
