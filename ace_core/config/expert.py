"""The expert's settings (:class:`ExpertConfig`) and the ``greedy:...`` spec that names them.

They live with the other configs, since a run's teacher and mines name an expert by these settings;
the search itself is :mod:`ace_core.agents.expert`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from ace_core.errors import AgentSpecError


@dataclass(frozen=True)
class ExpertConfig:
    budget: int = 3000
    """most candidates simulated per stressed step (the default action included)"""
    lines: int = 2
    """the substations at both ends of this many most loaded lines are searched"""
    threshold: float = 0.9
    """the expert searches when max rho reaches this"""
    safe: float = 0.8
    """below this max rho, a split substation may go back to all-on-bus-1 if it stays below (0: never)"""
    actions: str = ""
    """a mined action set (action_set.json) simulated first; empty: none"""
    learned: int = 50
    """the expert's own most played topologies simulated first (0: off)"""
    n1: int = 0
    """the best K candidates are re-ranked by their worst single-line outage (0: off; see step 3).
    The 118-bus validation days chose 4 for the expert with continuous moves (docs/results-stress.md,
    "What loses the heavier 118-bus days")"""
    flex: int = 0
    """continuous moves (redispatch, curtailment, storage) tried when no topology clears the
    threshold, each alone and with the best topology: at most 2 x this many simulations (0: off;
    see step 5)"""
    gain: float = 0.0
    """with ``flex``: a continuous move that leaves max rho at the threshold is played only if it
    lowers the pick's simulated max rho by at least this much (0: any strict drop, to 1e-3), so
    that moves worth little do not pile up (see step 5)"""
    swap: int = 0
    """with ``flex``: 1 also tries each continuous move in place of the moves in force (released as
    far as one step allows), so a new move can replace them rather than add to them (0: off; see
    step 5)"""
    exact: int = 0
    """with ``flex``: 1 asks each redispatch so that the generator's target moves by the move's MW
    (grid2op sets a generator's first target to its actual dispatch plus the redispatch, which
    freezes the share of a curtailment's compensation it carries; 0: as grid2op takes it; see
    step 5)"""
    release: float = 0.0
    """with ``flex``: the moves in force are released (as far as one step allows) on any step whose
    max rho is below this and where the release keeps the simulated max rho below it too, up to
    the threshold (0: ``safe``, calm steps only; see step 4). The 36-bus validation days chose 0.85,
    the 118-bus ones none (figures: docs/results-stress.md, "Releasing the moves in force")"""
    stay: int = 0
    """with ``flex``: a continuous move is played only if grid2op can go on meeting its dispatch
    for this many steps of doing nothing after it, followed over the forecasts (else the next best
    move is checked; 0: off; see step 5)"""
    guard: float = 0.0
    """on a step below the threshold and at or above ``safe``: when a single line outage would put
    a line at this rho or more after doing nothing, the stressed candidates are searched for one
    that survives its worst outage better (0: off; see step 4)"""
    now: int = 0
    """up to this many of the best candidates are simulated again on the current injections and
    scored by the worse of that and their forecast max rho, best first (0: off; see step 3). The
    118-bus validation days chose 4 beside ``flex=4,n1=4`` (docs/results-stress.md, "Five
    validation days")"""
    attacked: int = 0
    """with ``n1`` or ``guard``: 1 screens only the outages of the lines the env's opponent can
    strike (grid2op's ``lines_attacked``; every line when it strikes none), rather than every line
    (0; see steps 3 and 4). Not chosen on the 118-bus validation days ("Five validation days")"""
    blind: int = 0
    """with ``flex``: 1 plays the release of the moves in force (step 4's, unsimulated) on a stressed
    step where every candidate's simulation fails (0: off; see step 3). Neither ``stay``, ``guard``
    nor ``blind`` was chosen on the 118-bus validation days (the ``n1`` figures' page)"""

    def key(self) -> dict:
        """The settings that identify the expert (e.g. in mine cache keys). Settings added later
        appear only when they differ from their default, so existing mines keep their key."""
        key = asdict(self)
        for name in _ADDED_LATER:
            if key[name] == getattr(ExpertConfig, name):
                del key[name]
        return key


_ADDED_LATER = ("n1", "flex", "gain", "swap", "exact", "release", "stay", "blind", "guard", "attacked", "now")


EXPERT_SETTINGS = ", ".join(f"{f.name}={f.default!r}" for f in fields(ExpertConfig))


def parse_expert_spec(argument: str) -> ExpertConfig:
    """``""`` -> defaults; ``"64"`` -> budget 64; ``"budget=500,lines=1"`` -> those settings."""
    if not argument:
        return ExpertConfig()
    if argument.lstrip("-").isdigit():
        if int(argument) < 1:
            raise AgentSpecError(f"greedy budget {argument!r} must be a positive integer, e.g. greedy:64")
        argument = f"budget={argument}"
    types = {f.name: f.type for f in fields(ExpertConfig)}
    values: dict = {}
    for item in argument.split(","):
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or key not in types:
            raise AgentSpecError(
                f"greedy setting {item!r} is not understood; accepted: greedy, greedy:BUDGET or "
                f"greedy:key=value,... with keys {', '.join(types)}"
            )
        try:
            values[key] = raw if types[key] == "str" else (int if types[key] == "int" else float)(raw)
        except ValueError:
            raise AgentSpecError(f"greedy setting {key}={raw!r} must be a {types[key]}") from None
    config = ExpertConfig(**values)
    if (
        config.budget < 1
        or config.lines < 1
        or min(config.learned, config.n1, config.flex, config.stay, config.now) < 0
        or not 0 <= config.gain < 1
        or config.swap not in (0, 1)
        or config.exact not in (0, 1)
        or config.blind not in (0, 1)
        or config.attacked not in (0, 1)
        or config.guard < 0
        or not (config.release == 0 or config.safe <= config.release <= config.threshold)
    ):
        raise AgentSpecError(
            "greedy budget and lines must be positive, learned >= 0, n1 >= 0, flex >= 0, stay >= 0, now >= 0, "
            "0 <= gain < 1, swap, exact, blind and attacked 0 or 1, release 0 or between safe and threshold, "
            "guard >= 0, "
            f"got {argument!r}"
        )
    return config
