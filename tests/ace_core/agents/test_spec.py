"""AgentSpec: every accepted spec reads into an AgentSpec and writes back as it was written."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ace_core.agents.deployed import deployed_checked, deployed_plain
from ace_core.agents.spec import CHECKED_FLAGS, FLEX_FLAGS, AgentSpec
from ace_core.config.expert import ExpertConfig
from ace_core.errors import AgentSpecError

# a run directory or checkpoint: anything without a colon (a colon separates a spec's parts)
paths = st.text(st.characters(blacklist_characters=":"), min_size=1, max_size=30)
ks = st.none() | st.integers(1, 10**6)
max_rhos = st.none() | st.floats(min_value=0, exclude_min=True, allow_infinity=False)


def _setting(name: str, default) -> st.SearchStrategy[str]:
    if isinstance(default, str):
        values = st.text(st.characters(blacklist_characters=","), max_size=20)
    elif name in ("swap", "exact", "blind", "attacked"):  # on or off
        values = st.integers(0, 1).map(str)
    elif isinstance(default, int):
        values = st.integers(1, 10**6).map(str)
    elif name == "gain":  # a share of max rho
        values = st.floats(min_value=0, max_value=1, exclude_max=True).map(repr)
    elif name == "guard":  # off, or the rho an outage must reach
        values = st.floats(min_value=0, allow_infinity=False).map(repr)
    elif name == "release":  # off, or between the default safe and threshold
        values = st.sampled_from(["0.0", "0.85"])
    else:
        values = st.floats(allow_nan=False, allow_infinity=False).map(repr)
    return values.map(lambda value: f"{name}={value}")


def _release_within_the_defaults(items: list[str]) -> bool:
    """A release is drawn between the default safe and threshold, so neither is drawn beside it."""
    released = any(item.startswith("release=0.85") for item in items)
    return not (released and any(item.startswith(("threshold=", "safe=")) for item in items))


greedy_settings = st.one_of(
    st.just(""),
    st.integers(1, 10**6).map(str),
    st.lists(
        st.sampled_from(list(vars(ExpertConfig()))).flatmap(
            lambda name: _setting(name, getattr(ExpertConfig(), name))
        ),
        min_size=1,
        max_size=4,
    )
    .filter(_release_within_the_defaults)
    .map(",".join),
)


@st.composite
def checked_specs(draw) -> AgentSpec:
    stop = draw(max_rhos)
    flags = {flag: draw(st.booleans()) for flag in CHECKED_FLAGS}
    flags["expert"] = flags["expert"] and stop is not None  # the fallback needs a stop
    flags["wary"] = flags["wary"] and stop is not None  # and so does wary
    budget = draw(ks) if flags["expert"] else None  # and a budget needs the fallback
    flex = draw(st.integers(0, 64)) if flags["expert"] and flags["revert"] else 0  # moves need both
    for flag in FLEX_FLAGS:  # and so do the flags of how moves are played
        flags[flag] = flags[flag] and flex > 0
    release = draw(max_rhos) if flex else None  # and the release of the moves in force
    return AgentSpec(
        "sac-checked",
        draw(paths),
        k=draw(ks),
        stop=stop,
        act=draw(max_rhos),
        expert_budget=budget,
        flex=flex,
        release=release,
        **flags,
    )


specs = st.one_of(
    st.sampled_from([AgentSpec("do-nothing"), AgentSpec("reconnect")]),
    st.builds(AgentSpec, st.just("greedy"), settings=greedy_settings),
    st.builds(AgentSpec, st.just("sac"), paths, act=max_rhos),
    st.builds(AgentSpec, st.just("sac-critic"), paths, k=ks, act=max_rhos),
    checked_specs(),
)


@given(specs)
def test_every_spec_reads_back_from_its_text(spec):
    text = str(spec)
    assert AgentSpec.parse(text) == spec
    assert str(AgentSpec.parse(text)) == text


@pytest.mark.parametrize(
    "text",
    [
        "do-nothing",
        "reconnect",
        "greedy",
        "greedy:64",
        "greedy:budget=500,lines=1",
        "sac:runs/a",
        "sac:runs/a:act=0.95",
        "sac-critic:runs/a",
        "sac-critic:runs/a:3:act=0.9",
        "sac-checked:runs/a",
        "sac-checked:runs/a:50:stop=0.95",
        "sac-checked:runs/a:50:stop=0.9:act=0.95",
        "sac-checked:runs/a:10:stop=1.0:expert",
        "sac-checked:runs/a:3:stop=0.95:expert:revert:critic",
        "sac-checked:runs/a:50:stop=0.95:expert:policy",
        "sac-checked:runs/a:50:stop=0.95:expert:steady",
        "sac-checked:runs/a:10:stop=0.95:expert=10:wary",
        "sac-checked:runs/a:50:stop=0.9:act=0.95:expert=200",
        "sac-checked:runs/a:revert",
        "sac-checked:runs/a:50:stop=0.9:act=0.95:expert=50:revert:flex=4",
        "sac-checked:runs/a:50:stop=0.9:act=0.95:expert=30:revert:flex=4:swap",
        "sac-checked:runs/a:50:stop=0.9:act=0.95:expert=30:revert:flex=4:swap:exact",
        "sac-checked:runs/a:50:stop=0.9:act=0.95:expert=30:revert:flex=4:release=0.85",
    ],
)
def test_a_spec_written_in_order_is_written_back_as_it_is(text):
    assert str(AgentSpec.parse(text)) == text


def test_act_and_the_flags_may_come_in_any_order_and_the_defaults_stay_implicit():
    spec = AgentSpec.parse("sac-checked:runs/a:3:act=100:stop=0.95:critic:expert")
    assert spec == AgentSpec("sac-checked", "runs/a", k=3, stop=0.95, act=100.0, expert=True, critic=True)
    assert str(spec) == "sac-checked:runs/a:3:stop=0.95:act=100.0:expert:critic"
    assert (
        AgentSpec.parse("sac-checked:runs/a").top_k == 10 and AgentSpec.parse("sac-critic:runs/a").top_k == 1
    )
    assert AgentSpec.parse("sac:runs/a").act is None  # the run's own threshold
    assert AgentSpec.parse("do-nothing:") == AgentSpec("do-nothing")


@pytest.mark.parametrize(
    "text, message",
    [
        ("clever", "unknown agent spec 'clever'; accepted: do-nothing, reconnect, greedy"),
        ("sac:", "unknown agent spec 'sac:'"),
        ("sac::act=0.9", "unknown agent spec 'sac::act=0.9'"),
        ("do-nothing:x", "unknown agent spec 'do-nothing:x'"),
        ("greedy:-3", "greedy budget '-3' must be a positive integer, e.g. greedy:64 (defaults: budget=3000"),
        ("sac-critic:runs/a:0", "sac-critic K '0' must be a positive integer, e.g. sac-critic:runs/a:10"),
        ("sac-checked:runs/a:0:stop=1.0", "sac-checked K '0' must be a positive integer"),
        ("sac-checked:runs/a:3:expert", "sac-checked's expert fallback needs a stop"),
        ("sac-checked:runs/a:3:expert=200", "sac-checked's expert fallback needs a stop"),
        ("sac-checked:runs/a:3:stop=0.9:expert=0", "the expert's budget must be a positive integer"),
        ("sac-checked:runs/a:3:stop=0.9:expert=wide", "e.g. sac-checked:runs/a:50:stop=0.95:expert=200"),
        ("sac-checked:runs/a:3:stop=high", "sac-checked stop 'stop=high' must be a positive max rho"),
        (
            "sac-checked:runs/a:3:stop=0.9:expert:revert:flex=0",
            "the number of continuous moves must be a positive",
        ),
        ("sac-checked:runs/a:3:wary", "sac-checked's wary needs a stop"),
        ("sac-checked:runs/a:3:stop=0.9:expert:revert:swap", "sac-checked's swap needs flex"),
        ("sac-checked:runs/a:3:stop=0.9:expert:revert:exact", "sac-checked's exact needs flex"),
        (
            "sac-checked:runs/a:3:stop=0.9:expert:revert:release=0.85",
            "sac-checked's release needs flex (it changes how continuous moves are played), "
            "e.g. sac-checked:runs/a:50:stop=0.9:expert=50:revert:flex=4:release=0.85",
        ),
        (
            "sac-checked:runs/a:3:stop=0.9:expert:revert:flex=4:release=soon",
            "sac-checked release 'release=soon' must be a positive max rho, "
            "e.g. sac-checked:runs/a:50:stop=0.9:expert=30:revert:flex=4:release=0.85",
        ),
        (
            "sac-checked:runs/a:3:stop=0.9:expert:revert:flex=4:release=0",
            "'release=0' must be a positive max rho",
        ),
        (
            "sac-checked:runs/a:3:stop=0.9:expert:flex=4",
            "sac-checked's flex needs the expert fallback and revert",
        ),
        ("sac-checked:runs/a:3:revert:flex=4", "e.g. sac-checked:runs/a:50:stop=0.9:expert=50:revert:flex=4"),
        ("sac:runs/a:act=0", "sac 'act=0': one act=R with R a positive max rho"),
        ("sac:runs/a:act=0.9:act=1.0", "sac 'act=0.9:act=1.0': one act=R with R a positive max rho"),
    ],
)
def test_a_bad_spec_says_what_is_wrong_and_what_is_accepted(text, message):
    with pytest.raises(AgentSpecError) as info:
        AgentSpec.parse(text)
    assert message in str(info.value)


@pytest.mark.parametrize(
    "kind, values, message",
    [
        ("wizard", {}, "unknown agent kind 'wizard'"),
        ("sac", {}, "sac needs the path of a run directory or checkpoint"),
        ("sac", {"path": "runs/a", "stop": 0.9}, "sac takes no stop"),
        ("do-nothing", {"path": "runs/a"}, "do-nothing takes no path"),
        ("sac-critic", {"path": "runs/a", "k": 0}, "sac-critic K 0 must be a positive integer"),
        (
            "sac-checked",
            {"path": "runs/a", "act": math.inf},
            "sac-checked act=inf must be a positive max rho",
        ),
        ("sac-checked", {"path": "runs/a", "expert": True}, "needs a stop"),
        ("sac-checked", {"path": "runs/a", "stop": 0.9, "expert_budget": 200}, "needs the expert fallback"),
        ("sac", {"path": "runs/a", "expert_budget": 200}, "sac takes no expert_budget"),
        ("sac", {"path": "runs/a", "flex": 4}, "sac takes no flex"),
        (
            "sac-checked",
            {"path": "runs/a", "stop": 0.9, "expert": True, "revert": True, "flex": -1},
            "flex=-1",
        ),
        ("greedy", {"settings": "wide"}, "greedy setting 'wide' is not understood"),
    ],
)
def test_a_spec_built_in_code_that_would_not_read_back_is_refused(kind, values, message):
    with pytest.raises(AgentSpecError, match=message):
        AgentSpec(kind, **values)


def test_options_written_as_in_a_spec_are_read_as_one():
    spec = AgentSpec.with_options("sac-checked", "runs/a/best.pt", "10:stop=1.0:expert")
    assert spec == AgentSpec("sac-checked", "runs/a/best.pt", k=10, stop=1.0, expert=True)
    assert AgentSpec.with_options("sac", "runs/a") == AgentSpec("sac", "runs/a")
    with pytest.raises(AgentSpecError, match="positive max rho"):
        AgentSpec.with_options("sac-checked", "runs/a", "10:stop=high")


def test_each_grid_deploys_its_policy_with_the_check_its_validation_days_chose():
    assert (
        str(deployed_checked("rte_case14_realistic", "r/best.pt"))
        == "sac-checked:r/best.pt:10:stop=0.95:expert=10"
    )
    assert (
        str(deployed_checked("l2rpn_case14_sandbox", "r/best.pt"))
        == "sac-checked:r/best.pt:50:stop=0.95:expert"
    )
    assert (
        str(deployed_checked("l2rpn_neurips_2020_track1", "r/best.pt"))
        == "sac-checked:r/best.pt:50:stop=0.9:act=0.95:expert=30:revert:flex=4:release=0.85"
    )
    assert (
        str(deployed_checked("l2rpn_idf_2023", "r/best.pt")) == "sac-checked:r/best.pt:50:stop=0.95:expert=30"
    )
    assert str(deployed_plain("rte_case14_realistic", "r/best.pt")) == "sac:r/best.pt"
    assert str(deployed_plain("l2rpn_neurips_2020_track1", "r/best.pt")) == "sac:r/best.pt:act=1.0"
