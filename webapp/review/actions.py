"""A refinement's actions in words and as small substation diagrams, from the run's action space.

The trainer records action indices into its run's action space (the grid's full space, restricted
to ``action_subset`` when the run set one), so the same space turns an index back into words
(:meth:`ace_core.grid.action_space.ActionSpace.describe`) and into the buses it sets. The space is
built once per grid and subset and kept (building it opens the grid: about a second on the 14-bus
grids, the disk cache of spaces on the large ones). When the grid is not available here, an index
is described by the text the trainer stored with it, and no diagram is drawn.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # grid2op is loaded when a page first needs a space, not with the web app
    from ace_core.grid.action_space import ActionSpace

SPACE_CACHE_SIZE = 4
"""action spaces kept in memory (one per grid and subset reviewed lately)"""


@functools.lru_cache(maxsize=SPACE_CACHE_SIZE)
def _space(env: str, subset: str) -> ActionSpace | None:
    from ace_core.grid.action_space import build_action_space
    from ace_core.grid.envs import make_env

    try:
        grid = make_env(env, cache_chronics=False)
    except Exception:  # noqa: BLE001 -- a grid missing here: the stored words still stand
        return None
    try:
        space = build_action_space(grid)
        return space.restrict_to_file(subset) if subset else space
    except Exception:  # noqa: BLE001 -- e.g. a subset file no longer on disk
        return None
    finally:
        grid.close()


def run_action_space(*, env: str, config: dict[str, Any]) -> ActionSpace | None:
    """The action space a run chose its actions in; None when its grid (or subset file) is not
    available here."""
    return _space(env, str(config.get("action_subset") or ""))


def action_words(space: ActionSpace | None, index: int | None, known: dict[int, str]) -> str:
    """Action ``index`` in words: from the space, else from ``known`` (index -> words the trainer
    stored), else its number."""
    if index is None:
        return "no action parsed"
    if space is not None:
        try:
            return space.describe(index)
        except Exception:  # noqa: BLE001 -- an index outside the space: say so below
            pass
    return known.get(index, f"action #{index} (not described: the run's grid is not available here)")


def action_diagram(space: ActionSpace | None, index: int | None) -> dict[str, Any] | None:
    """What the page draws for an action: the substation it splits, each element on its bus
    (``{"kind": "topology", "substation": name, "elements": [{"name", "bus"}]}``), the line it
    reconnects between its two substations (``{"kind": "reconnect", "line", "from", "to"}``), or
    ``{"kind": "nothing"}`` for doing nothing, ``{"kind": "move", "words"}`` for a continuous move;
    None when the space is not available."""
    if space is None or index is None:
        return None
    try:
        index = space.check_index(index)
    except Exception:  # noqa: BLE001 -- an index outside the space: no diagram
        return None
    if index == 0:
        return {"kind": "nothing"}
    if index >= space.first_move:
        return {"kind": "move", "words": space.describe(index)}
    if index < space.first_topology:
        line = index - 1
        return {
            "kind": "reconnect",
            "line": space.line_name(line),
            "from": space.substation_name(int(space.line_or_sub[line])),
            "to": space.substation_name(int(space.line_ex_sub[line])),
        }
    sub, buses = space.bits_of(index)
    start = int(space.sub_start[sub])
    return {
        "kind": "topology",
        "substation": space.substation_name(sub),
        "elements": [
            {"name": space.element_labels[start + j], "bus": int(bus)} for j, bus in enumerate(buses)
        ],
    }
