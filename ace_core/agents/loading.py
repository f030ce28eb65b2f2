"""An agent built from its spec (:mod:`ace_core.agents.spec`): the baselines, the expert or a
trained policy, plain, judged by its critics or checked by simulation.

Apart from the spec language, which reads and checks specs with neither torch nor grid2op (the
web process checks the specs its forms are given), this module loads both.
"""

from __future__ import annotations

from pathlib import Path

from ace_core.agents.baselines import DoNothing, Reconnect, TimedAgent
from ace_core.agents.expert import Expert
from ace_core.agents.greedy import Greedy
from ace_core.agents.sac import CheckedSacAgent, CriticSacAgent, SacAgent, load_sac, refuse_untrained_critics
from ace_core.agents.spec import AgentSpec
from ace_core.config.expert import ExpertConfig, parse_expert_spec
from ace_core.errors import AgentSpecError
from ace_core.grid.action_space import ActionSpace, build_action_space


def load_agent(spec: str | AgentSpec, env, space: ActionSpace | None = None) -> TimedAgent:
    """Build the agent a spec names; see :mod:`ace_core.agents.spec` for the accepted specs."""
    text = str(spec)
    spec = AgentSpec.parse(spec) if isinstance(spec, str) else spec
    space = space or build_action_space(env)
    if spec.kind == "do-nothing":
        return DoNothing(env, space)
    if spec.kind == "reconnect":
        return Reconnect(env, space)
    if spec.kind == "greedy":
        return Greedy(env, space, config=parse_expert_spec(spec.settings))
    sac, space, features, config = load_sac(Path(spec.path), env, space)
    threshold = config.rho_threshold if spec.act is None else spec.act
    if spec.kind == "sac":
        return SacAgent(env, space, sac, features, threshold)
    if spec.kind == "sac-critic":
        refuse_untrained_critics(sac, text, spec.path)
        return CriticSacAgent(env, space, sac, features, threshold, spec.top_k)
    if spec.critic:
        refuse_untrained_critics(sac, text, spec.path)
    expert = None
    if spec.expert or spec.revert:
        budget = {} if spec.expert_budget is None else {"budget": spec.expert_budget}
        config = ExpertConfig(
            threshold=threshold,
            flex=spec.flex,
            swap=int(spec.swap),
            exact=int(spec.exact),
            release=spec.release or 0.0,
            **budget,
        )
        if spec.release is not None and not config.safe <= spec.release <= threshold:
            raise AgentSpecError(
                f"sac-checked release={spec.release!r} must lie between the expert's safe ({config.safe}) "
                f"and the max rho the policy acts from ({threshold})"
            )
        expert = Expert.from_config(space, env.action_space, config)
    return CheckedSacAgent(
        env,
        space,
        sac,
        features,
        threshold,
        spec.top_k,
        spec.stop,
        expert=expert if spec.expert else None,
        reverter=expert if spec.revert else None,
        critic_order=spec.critic,
        policy_first=spec.policy,
        steady=spec.steady,
        wary=spec.wary,
    )
