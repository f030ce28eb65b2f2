"""Beyond topology: redispatch, curtailment and storage, the grid's continuous moves.

- :mod:`~ace_core.grid.flex.moves`: a move (:class:`FlexMove`), the limits it must respect, in
  words (ramps, Pmin/Pmax, renewables only, storage capacity), its cost, and grid2op's action;
- :mod:`~ace_core.grid.flex.sensitivity`: how much each generator's or storage unit's injection
  moves the flow of the overloaded lines (the DC model's power transfer distribution factors,
  LightSim2Grid's ``get_ptdf``);
- :mod:`~ace_core.grid.flex.proposals`: the moves worth simulating on a stressed state, from those
  sensitivities, and the move that releases what is no longer needed on a calm one;
- :mod:`~ace_core.grid.flex.stay`: whether grid2op can go on meeting the dispatch a move leaves,
  followed over the forecasts.
"""
