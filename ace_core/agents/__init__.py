"""grid2op agents: the baselines, the expert, the trained policy and the spec language that names them.

- :mod:`~ace_core.agents.baselines`: do-nothing and reconnect, and the per-step timing every agent keeps;
- :mod:`~ace_core.agents.expert`: the greedy expert, a wide one-step search by simulation;
- :mod:`~ace_core.agents.greedy`: the expert as an agent, and the narrow search the trainer's teacher uses;
- :mod:`~ace_core.agents.sac`: the trained SAC/ACE policy as an agent, plain, judged by its critics or checked by simulation;
- :mod:`~ace_core.agents.spec`: the spec strings (``sac-checked:RUN:50:stop=0.95``), read and checked without torch or grid2op;
- :mod:`~ace_core.agents.loading`: :func:`~ace_core.agents.loading.load_agent`, the agent a spec names;
- :mod:`~ace_core.agents.deployed`: how each grid's policy is deployed (the check its validation days chose).
"""
