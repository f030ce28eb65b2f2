import numpy as np
import pytest

from ace_core.grid.contingency import ContingencyListError, resolve_lines, screen_n1
from ace_core.grid.envs import make_env
from ace_core.grid.simulate import simulate_many
from ace_core.grid.solved import SolvedGrid


@pytest.fixture(scope="module")
def stressed():
    """The 14-bus grid with its limits at 80 %: outages that overload lines."""
    env = make_env("l2rpn_case14_sandbox")
    env.set_thermal_limit(env.get_thermal_limit() * 0.8)
    obs = env.reset(seed=0, options={"time serie id": 0})
    yield env, obs
    env.close()


def _grid2op_outage(env, backend, line: int):
    """rho after losing ``line``: a copy of the post-action backend, the line out, grid2op's
    backend power flow; None when the power flow fails (diverged or split grid)."""
    copy = backend.copy()
    change = env._backend_action_class()
    change += env.action_space({"set_line_status": [(line, -1)]})
    copy.apply_action(change)
    converged, _ = copy.runpf(is_dc=False)
    return np.asarray(copy.get_relative_flow()) if converged else None


def test_n1_matches_grid2op_power_flows_on_each_post_action_grid(stressed, sandbox_space):
    env, obs = stressed
    names = [str(n) for n in env.name_line]
    indices = [0, *range(sandbox_space.first_topology, sandbox_space.n, 23)]
    actions = [sandbox_space.to_grid2op(i, env.action_space) for i in indices]
    checked = diverged = overloading = 0

    def compare(i, simulated, backend):
        nonlocal checked, diverged, overloading
        if simulated.done:
            return
        screen = screen_n1(SolvedGrid.of(backend), range(env.n_line), names)
        by_line = {o.line: o for o in screen.outages}
        for line in range(env.n_line):
            if not backend.get_line_status()[line]:
                assert line in screen.skipped
                continue
            expected = _grid2op_outage(env, backend, line)
            outage = by_line[line]
            if expected is None:
                assert outage.diverged and outage.max_rho is None
                diverged += 1
                continue
            expected[line] = 0.0
            assert not outage.diverged
            assert outage.max_rho == pytest.approx(expected.max(), abs=1e-5)
            assert outage.worst_line == int(np.argmax(expected))
            assert set(outage.overloaded) == set(np.flatnonzero(expected >= 1.0).tolist())
            overloading += bool(outage.overloaded)
            checked += 1

    simulate_many(obs, actions, after_each=compare)
    assert checked > 50 and diverged > 0 and overloading > 0


def test_screening_orders_outages_worst_first_and_counts_overloads(stressed):
    env, obs = stressed
    names = [str(n) for n in env.name_line]
    simulate_many(obs, [env.action_space({})])
    screen = screen_n1(SolvedGrid.of(obs._obs_env.backend), range(env.n_line), names)
    converged = [o for o in screen.outages if not o.diverged]
    assert [o.max_rho for o in converged] == sorted((o.max_rho for o in converged), reverse=True)
    assert screen.worst is converged[0]
    assert screen.n_overloading == sum(1 for o in converged if o.max_rho >= 1.0)
    assert screen.status.startswith("not N-1 secure") and not screen.secure
    payload = screen.to_json()
    assert payload["worst"]["outage_name"] == screen.worst.line_name
    at_risk = {item["line"]: item["outages"] for item in payload["lines_at_risk"]}
    assert at_risk and at_risk == {
        line: sum(line in o.overloaded for o in screen.outages)
        for line in {i for o in screen.outages for i in o.overloaded}
    }
    assert payload["diverged"] == [o.line_name for o in screen.diverged]


def test_a_contingency_list_limits_the_outages_screened(stressed):
    env, obs = stressed
    names = [str(n) for n in env.name_line]
    lines = resolve_lines([names[3], 5, names[7]], names)
    assert lines == (3, 5, 7)
    simulate_many(obs, [env.action_space({})])
    screen = screen_n1(SolvedGrid.of(obs._obs_env.backend), lines, names)
    assert sorted(o.line for o in screen.outages) == [3, 5, 7]


def test_unknown_lines_in_a_contingency_list_are_a_clear_error(stressed):
    env, _ = stressed
    names = [str(n) for n in env.name_line]
    assert resolve_lines(None, names) == tuple(range(env.n_line))
    with pytest.raises(
        ContingencyListError, match=r"unknown line\(s\).*'no_such_line'.*accepted: line ids 0 to 19"
    ):
        resolve_lines(["no_such_line", 2], names)
    with pytest.raises(ContingencyListError, match="20"):
        resolve_lines([20], names)
    with pytest.raises(ContingencyListError, match="empty"):
        resolve_lines([], names)
