"""Fixtures for the core: one env per grid for the session (making one costs 1-3 s), a tiny random
chat model built in code, and a real HTTP chat server.

The tiny model (a 2-layer Llama, hidden 64, with a BPE tokenizer trained here and a ChatML
template) runs every real code path of the local backend and LoRA in milliseconds; nothing is
downloaded. The chat server is a real ``http.server`` on 127.0.0.1 speaking the OpenAI
chat-completions JSON, either serving the tiny model or replaying scripted answers.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from ace_core.grid.action_space import build_action_space
from ace_core.grid.envs import make_env
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.forecasts import make_env_with_forecasts


@pytest.fixture(scope="session")
def sandbox():
    return make_env("l2rpn_case14_sandbox")


@pytest.fixture(scope="session")
def sandbox_space(sandbox):
    return build_action_space(sandbox)


@pytest.fixture(scope="session")
def sandbox_features(sandbox):
    return FeatureBuilder(sandbox)


@pytest.fixture(scope="session")
def wcci():
    return make_env("l2rpn_wcci_2020")


@pytest.fixture(scope="session")
def wcci_space(wcci):
    return build_action_space(wcci)


@pytest.fixture
def fresh_obs(sandbox):
    return sandbox.reset(seed=0, options={"time serie id": 0})


# A sandbox grid of its own with one line's limit lowered: an overload no topology of a one-move
# budget clears, on a line the redispatchable generators load (line 0, 1.02 x its limit at the
# start of day 0, seed 0). For the continuous moves (tests/ace_core/grid/flex/, test_expert.py).
OVERLOADED_LINE = 0


@pytest.fixture(scope="module")
def tight_sandbox():
    env = make_env("l2rpn_case14_sandbox")
    obs = env.reset(seed=0, options={"time serie id": 0})
    limits = np.array(env.get_thermal_limit(), dtype=float)
    limits[OVERLOADED_LINE] *= obs.rho[OVERLOADED_LINE] / 1.02
    env.set_thermal_limit(limits)
    return env


@pytest.fixture
def tight_obs(tight_sandbox):
    return tight_sandbox.reset(seed=0, options={"time serie id": 0})


# A sandbox grid with twelve steps of perfect forecasts, and a state with redispatch targets in
# force (+20 / -20 MW on generators 0 and 1, after four steps of the pair below); optionally a
# forecast in which generator 0's own schedule reaches its Pmax (less 1 MW) from a given step, so
# that pushing its target further up cannot be met there. For moves followed over the forecasts
# (tests/ace_core/grid/flex/test_stay.py, test_expert.py).
TARGETS_PAIR = [(0, 5.0), (1, -5.0)]


@pytest.fixture(scope="session")
def forecast_sandbox():
    return make_env_with_forecasts("l2rpn_case14_sandbox", "perfect", 12)


@pytest.fixture
def targets_in_force(forecast_sandbox):
    def state(schedule_at_pmax_from: int | None = None):
        env = forecast_sandbox
        obs = env.reset(seed=0, options={"time serie id": 0})
        for _ in range(4):
            obs, *_ = env.step(env.action_space({"redispatch": TARGETS_PAIR}))
        if schedule_at_pmax_from is not None:
            for _, forecast in obs._forecasted_inj[schedule_at_pmax_from:]:
                injection = forecast["injection"]
                injection["prod_p"] = injection["prod_p"].copy()
                injection["prod_p"][0] = obs.gen_pmax[0] - 1
        return obs

    return state


@pytest.fixture(scope="module")
def storage_env():
    return make_env("educ_case14_storage")


CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

CORPUS = [
    "line 4 is overloaded with rho 1.12 at substation 12",
    "split substation 5 into two buses and reconnect line 7",
    "the agent chose to do nothing and the reward was -0.4",
    "answer with the letter only: A B C D E yes no",
    "You are a power grid operator assistant. Choose the action that relieves overloads.",
    "0 1 2 3 4 5 6 7 8 9 10 11 12 bus set_bus json action choice",
] * 20


def build_tiny_model(folder: Path, max_positions: int = 512) -> Path:
    """Save a random 2-layer Llama chat model with its own small tokenizer to ``folder``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        CORPUS,
        trainers.BpeTrainer(
            vocab_size=400, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<|im_start|>", eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tokenizer.chat_template = CHATML
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        initializer_range=0.3,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def tiny_long_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with room for ACE's prompts (grid state, candidates, retries: ~1-3k tokens)."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-llama-long"), max_positions=8192)


@pytest.fixture
def tiny_backend(tiny_model_dir: Path):
    from ace_core.llm.local import LocalBackend

    return LocalBackend(tiny_model_dir, threads=1)


class ChatServer:
    """A real chat-completions server on 127.0.0.1, in a thread.

    Each POST pops the next scripted step from ``script``; when the script is empty it answers
    with ``backend`` (a LocalBackend) if one is set. Steps: ``("json", status, object)``,
    ``("raw", status, bytes)``, ``("close",)`` (hang up), ``("sleep", seconds)`` (delays the next step), with optional
    headers as a fourth item. Every request body and its headers are kept in ``requests``.
    """

    def __init__(self, backend=None, model_name: str = "tiny-llama") -> None:
        self.backend = backend
        self.model_name = model_name
        self.script: list[tuple] = []
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep pytest output clean
                pass

            def do_GET(self) -> None:
                if self.path.endswith("/models"):
                    self._send(
                        200, json.dumps({"object": "list", "data": [{"id": server.model_name}]}).encode()
                    )
                else:
                    self._send(404, b'{"error": {"message": "no such route"}}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                if not self.path.endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "no such route"}}')
                    return
                with server._lock:
                    step = server.script.pop(0) if server.script else None
                    # A delay and the answer after it belong to the same request, even if the
                    # client retries meanwhile.
                    if step is not None and step[0] == "sleep":
                        delay, step = step[1], server.script.pop(0) if server.script else None
                    else:
                        delay = 0.0
                time.sleep(delay)
                if step is None:
                    self._send(200, json.dumps(server.model_answer(body)).encode())
                    return
                if step[0] == "close":  # hang up without a status line
                    self.close_connection = True
                    return
                payload = json.dumps(step[2]).encode() if step[0] == "json" else step[2]
                self._send(step[1], payload, step[3] if len(step) > 3 else {})

            def _send(self, status: int, payload: bytes, headers: dict | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def model_answer(self, body: dict) -> dict:
        if self.backend is None:
            return self.reply("(no model behind this server)")
        text = self.backend.chat(
            body["messages"],
            max_new_tokens=int(body.get("max_tokens", 16)),
            temperature=body.get("temperature", 0),
        )
        return self.reply(text, model=self.model_name)

    @staticmethod
    def reply(content, *, model: str = "tiny-llama", top_logprobs: dict[str, float] | None = None) -> dict:
        """A chat-completions response body, optionally with first-token top log-probs."""
        choice: dict = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
        }
        if top_logprobs is not None:
            top = [{"token": token, "logprob": logprob} for token, logprob in top_logprobs.items()]
            first = top[0] if top else {"token": "", "logprob": 0.0}
            choice["logprobs"] = {"content": [dict(first, top_logprobs=top)]}
        return {"id": "chatcmpl-test", "object": "chat.completion", "model": model, "choices": [choice]}


def _serve(server: ChatServer) -> Iterator[ChatServer]:
    server.thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """A server replaying ``chat_server.script``."""
    yield from _serve(ChatServer())


@pytest.fixture
def model_server(tiny_backend) -> Iterator[ChatServer]:
    """A server answering with the tiny model (``model_server.backend``)."""
    yield from _serve(ChatServer(backend=tiny_backend))


# ----- mining (tests/ace_core/test_mining.py, test_imitation.py) -----

MINE_ENV = "rte_case14_realistic"
# a tiny mine: 3 train days cut to 16 steps, an expert that acts from max rho 0.7 (the first
# steps of these days sit at 0.7-0.88, so every step is a decision)
MINE_EXPERT = "greedy:threshold=0.7"


@pytest.fixture(scope="session")
def local_ray():
    """Ray in local mode with two worker CPUs, shared by the mining tests."""
    import ray

    from ace_core.workers import Workers

    Workers(2).up()
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def mined(local_ray, tmp_path_factory):
    """(spec, directory, summary) of one complete tiny mine on two Ray workers."""
    from ace_core.imitation.mining import MineSpec, mine
    from ace_core.workers import Workers

    spec = MineSpec(env=MINE_ENV, expert=MINE_EXPERT, episodes=3, episode_length=16)
    out = tmp_path_factory.mktemp("mine") / "rte14"
    summary = mine(spec, out, workers=Workers(2), log=lambda text: None)
    return spec, out, summary
