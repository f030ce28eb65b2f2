"""One element has one name across the console: with a grid's readable names
(``$GRIDACE_NAMES_DIR/<env>.json``, :mod:`ace_core.grid.names`), the cards, the security panel,
the alarms, the early-warning banner and the diagram's hover texts call every line, substation,
generator and load by its readable name, the same name for the same id everywhere, and never by
the grid's default names (``line 1-4``, ``substation 4``); grid2op's raw names are only in the
diagram's hover detail and the banner's tooltips.

The sandbox's days are calm (no alarm in their first hours), so the operator takes two lines out
from the what-if panel, one step after the other: the grid then overloads lines (alarms naming
them) and every option looked ahead overloads a line (the agent's early warning, a banner).

With ``GRIDACE_SCREENSHOTS=1`` the test also refreshes the console's and the shift summary's
screenshots in ``docs/screenshots/`` (without it they go to ``artifacts/`` only, so a test run
leaves the tree as it was).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.browser.conftest import ROOT, browser, in_thread, log_in, pause_and_settle
from tests.browser.test_operator import ENV, PASSWORD, _set_up, live_worker  # noqa: F401 - a fixture of this test
from webapp.operations.models import Alarm, LiveRecommendation, SessionStep

GREEK = "Alpha Beta Gamma Delta Epsilon Zeta Eta Theta Iota Kappa Lambda Mu Nu Xi".split()
TREES = "Oak Elm Ash Yew Fir Bay".split()
TOWNS = "Amber Birch Cedar Dune Ember Fern Glen Heath Ivy Juniper Kestrel".split()
NAMES = {
    # the sandbox's 20 lines, 14 substations, 6 generators and 11 loads
    "lines": [f"Corridor {chr(ord('A') + i)}" for i in range(20)],
    "substations": GREEK,
    "generators": [f"{tree} Plant" for tree in TREES],
    "loads": [f"{town} Town" for town in TOWNS],
}
MENTION = {
    "lines": re.compile(r"\bCorridor [A-Z]\b"),
    "substations": re.compile(r"\b(?:" + "|".join(GREEK) + r")\b"),
    "generators": re.compile(r"\b\w+ Plant\b"),
    "loads": re.compile(r"\b\w+ Town\b"),
}
"""how a readable name of each kind looks in a text (to find every one it mentions)"""
DEFAULT_NAME = re.compile(r"\b(?:line \d+(?:-\d+)?|substation \d+|generator \d+|load \d+|storage \d+)\b")
RAW_NAME = re.compile(r"\b(?:\d+_\d+_\d+|sub_\d+|gen_\d+_\d+|load_\d+_\d+)\b")
"""the grid's default names (:func:`ace_core.grid.names.default_names`) and grid2op's raw names"""

SHOWN = """() => {
  const diagram = document.getElementById('diagram');
  const cards = [...document.querySelectorAll('#recommendations .rec-card')];
  const n1 = document.getElementById('n1-status').textContent;
  if (!(Number(diagram.dataset.step) >= 1) || !diagram.data || !cards.length
      || !cards.every(c => c.querySelector('.rec-n1')) || !n1.includes('losing')) { return null; }
  return {
    step: Number(diagram.dataset.step),
    traces: diagram.data.map(t => ({ name: t.name || '', text: t.text || [], hovertext: t.hovertext || [] })),
    cards: cards.map(c => ({ id: Number(c.dataset.id), step: Number(c.dataset.step),
      substations: c.dataset.substations ? c.dataset.substations.split(',').map(Number) : [],
      action: c.querySelector('.rec-action').textContent, n1: c.querySelector('.rec-n1').textContent,
      text: c.querySelector('.rec-body').textContent })),
    n1: n1,
    security: document.getElementById('security').textContent,
    rejected: document.getElementById('rejected-list').textContent,
    alarms: [...document.querySelectorAll('#alarms .alarm .what')].map(a => a.textContent.trim()),
  };
}"""
"""the console's texts once it shows cards and the grid's N-1 (null before): the diagram's traces,
the cards, the security panel and the alarms, read in one go (no step lands in between)"""
HOVER_LINE = """line => {
  const diagram = document.getElementById('diagram');
  const trace = diagram.data.findIndex(t => t.name === 'lines');
  Plotly.Fx.hover(diagram, [{ curveNumber: trace, pointNumber: line }]);
}"""
"""shows a line's hover label on the diagram (its marker at the line's middle)"""
SCREENSHOTS = ROOT / "docs" / "screenshots"
TAKEN_OUT = (8, 3)
"""the lines the operator disconnects (the sandbox's lines 5-11 then 1-3), from any of the first
steps of scenario 0: the first overloads lines 5-12 and 11-12, the second line 1-4 with every
option looked ahead overloading it within the hour"""
BANNER = """() => {
  const banner = document.getElementById('early-warning');
  if (banner.hidden) { return null; }
  return {
    step: Number(document.getElementById('diagram').dataset.step),
    level: banner.dataset.level,
    className: banner.className,
    text: banner.textContent,
    lines: [...banner.querySelectorAll('.line')].map(l => ({ id: Number(l.dataset.line), name: l.textContent, title: l.title })),
  };
}"""
"""the early-warning banner once it shows (null while hidden)"""


@pytest.fixture
def names_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "names"
    folder.mkdir()
    by_id = {kind: {str(i): name for i, name in enumerate(names)} for kind, names in NAMES.items()}
    (folder / f"{ENV}.json").write_text(json.dumps(by_id))
    monkeypatch.setenv("GRIDACE_NAMES_DIR", str(folder))
    return folder


@pytest.fixture
def process_env(process_env: dict[str, str], names_dir: Path) -> dict[str, str]:
    """The server's and the live feed's environment, with the readable names."""
    return {**process_env, "GRIDACE_NAMES_DIR": str(names_dir)}


def _mentions(text: str) -> dict[str, set[str]]:
    return {kind: set(pattern.findall(text)) for kind, pattern in MENTION.items()}


def _assert_readable(text: str, where: str) -> None:
    """Only the file's names in ``text``, never a default or a raw one."""
    assert not DEFAULT_NAME.findall(text), f"default names in {where}: {text!r}"
    assert not RAW_NAME.findall(text), f"grid2op's raw names in {where}: {text!r}"
    for kind, found in _mentions(text).items():
        assert found <= set(NAMES[kind]), (
            f"{kind} not in the names file in {where}: {found - set(NAMES[kind])}"
        )


def _check_diagram(traces: list[dict]) -> None:
    """Each line's hover text starts with its name, then its id and raw name as the detail; each
    substation, generator and load is hovered by its name."""
    by_name = {t["name"]: t for t in traces}
    lines = {}
    for words in by_name["lines"]["text"]:
        match = re.match(r"(.+?) \(id (\d+), (\d+_\d+_\d+)\)<br>(.*)", words, re.S)
        assert match, f"a line's hover text without its name, id and raw name: {words!r}"
        name, line, _raw, detail = match.groups()
        lines[int(line)] = name
        _assert_readable(detail, f"line {line}'s hover detail")
    assert lines == dict(enumerate(NAMES["lines"]))
    subs = {}
    for trace in (by_name["substation"], by_name["split substation (2 buses)"]):
        for label, words in zip(trace["text"], trace["hovertext"]):
            if label:  # a split substation's second bus has no label
                subs[int(label)] = words.removesuffix(" split: bus 1 and bus 2")
    assert subs == dict(enumerate(NAMES["substations"]))
    for kind, trace in (("generators", "generators (size: MW)"), ("loads", "loads (size: MW)")):
        names = {words.split(" at ")[0] for words in by_name[trace]["text"]}
        assert names == set(NAMES[kind])
    for trace in traces:
        for words in [*trace["text"], *trace["hovertext"]]:
            _assert_readable(
                re.sub(r"\(id \d+, \d+_\d+_\d+\)", "", str(words)), f"diagram trace {trace['name']}"
            )


def _take_out(page, line: int) -> int:
    """The operator disconnects ``line`` from the what-if panel and plays one step; the step the
    page then shows (its alarms and assessment with it)."""
    step = int(page.get_attribute("#diagram", "data-step"))
    page.select_option("#wi-kind", "line")
    page.select_option("#wi-line", str(line))
    page.select_option("#wi-line-status", "disconnect")
    page.click("#wi-apply")
    page.wait_for_function(
        "name => document.getElementById('notice').textContent.includes('«disconnect ' + name + '» will be played')",
        arg=NAMES["lines"][line],
    )
    page.click("#single-step")
    page.wait_for_function(
        f"() => Number(document.getElementById('diagram').dataset.step) > {step}", timeout=60_000
    )
    return int(page.get_attribute("#diagram", "data-step"))


def _check_alarms(page, session_id: int) -> None:
    """Every alarm shown in readable names; each one about a line names it by the line's name."""
    shown = [a.strip() for a in page.locator("#alarms .alarm .what").all_text_contents()]
    for text in shown:
        _assert_readable(text, "the alarms")
    alarms = in_thread(lambda: list(Alarm.objects.filter(session_id=session_id, line__isnull=False)))
    assert any(a.kind == "overload" for a in alarms), [a.message for a in alarms]
    for alarm in alarms:
        name = NAMES["lines"][alarm.line]
        if alarm.kind in ("overload", "maintenance", "line_tripped"):
            assert alarm.message.startswith(name + " "), alarm.message
        assert name in alarm.message, alarm.message
    assert {a.message for a in alarms} <= set(shown)


def _save(page, artifacts: Path, name: str, down_to: str = "") -> None:
    """A screenshot of the page (from its top down to the element ``down_to``, to keep the PNG
    small) to ``artifacts``; to ``docs/screenshots`` too with GRIDACE_SCREENSHOTS=1."""
    clip = None
    if down_to:
        bottom = page.evaluate(
            "s => document.querySelector(s).getBoundingClientRect().bottom + window.scrollY", down_to
        )
        clip = {"x": 0, "y": 0, "width": page.viewport_size["width"], "height": bottom + 16}
    page.screenshot(path=artifacts / name, full_page=True, clip=clip)
    if os.environ.get("GRIDACE_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(artifacts / name, SCREENSHOTS / name)


@pytest.mark.usefixtures("names_dir", "process_env", "live_worker")
def test_one_element_has_one_name_across_cards_alarms_and_diagram(server, artifacts, tmp_path):
    session_id = in_thread(lambda: _set_up(tmp_path))
    with browser(tmp_path) as page:
        page.set_viewport_size({"width": 1280, "height": 800})
        log_in(page, server, "op", PASSWORD)
        page.goto(f"{server}/live/{session_id}/")
        page.wait_for_function(SHOWN, timeout=120_000)
        pause_and_settle(page, session_id)
        shown = page.wait_for_function(SHOWN, timeout=15_000).json_value()
        step = shown["step"]

        # the diagram: every element by its readable name, the id and raw name as hover detail
        _check_diagram(shown["traces"])

        # the cards: their texts, the substation each one names is the one it touches, and the
        # lines of its N-1 worst case are those its figures name by id
        recs = in_thread(
            lambda: {
                r.pk: r for r in LiveRecommendation.objects.filter(pk__in=[c["id"] for c in shown["cards"]])
            }
        )
        for card in shown["cards"]:
            where = f"card {card['id']} «{card['action']}»"
            _assert_readable(card["text"], where)
            touched = {NAMES["substations"][s] for s in card["substations"]}
            assert _mentions(card["action"])["substations"] <= touched, where
            rec = recs[card["id"]]
            assert rec.step == card["step"] and rec.description == card["action"], where
            worst = (rec.figures.get("n1") or {}).get("worst")
            if worst:
                lines = NAMES["lines"]
                assert f"losing {lines[worst['outage']]} loads {lines[worst['worst_line']]}" in card["n1"], (
                    where
                )

        # the security panel: the grid's N-1 worst case by the names of its lines' ids
        _assert_readable(shown["security"], "the security panel")
        _assert_readable(shown["rejected"], "the rejected candidates")
        assessment = in_thread(lambda: SessionStep.objects.get(session_id=session_id, step=step).assessment)
        outage = assessment["security"]["n1"]["worst"]
        assert (
            f"losing {NAMES['lines'][outage['outage']]} loads {NAMES['lines'][outage['worst_line']]}"
            in shown["n1"]
        )

        # the operator takes two lines out: alarms name the lines overloaded and tripped, and the
        # agent's early warning names the lines every option overloads, each by its one name
        assert not page.is_visible("#early-warning")  # a calm grid: no early warning
        for line in TAKEN_OUT:
            step = _take_out(page, line)
        _check_alarms(page, session_id)
        banner = page.wait_for_function(BANNER, timeout=15_000).json_value()
        assert banner["step"] == step
        alert = in_thread(
            lambda: SessionStep.objects.get(session_id=session_id, step=step).assessment["alert"]
        )
        assert banner["level"] == alert["level"] and alert["lines"]
        assert banner["className"].split() == [
            "early-warning",
            "early-warning-critical" if alert["level"] == "failure" else "early-warning-warning",
        ]
        expected = "game over expected in about" if alert["level"] == "failure" else "overload expected in"
        assert f"Early warning: {expected} {alert['in_minutes']} min" in banner["text"], banner["text"]
        _assert_readable(banner["text"], "the early-warning banner")
        assert [(b["id"], b["name"]) for b in banner["lines"]] == [
            (i, NAMES["lines"][i]) for i in alert["lines"]
        ]
        # grid2op's raw name only as the tooltip
        assert all(RAW_NAME.fullmatch(b["title"]) for b in banner["lines"]), banner["lines"]
        assert alert["option"] in banner["text"]

        # a decision, for the shift summary to have one
        card = page.locator(".rec-card.rec-open", has_not=page.locator(".error")).first
        card.locator("button.accept").click()
        page.wait_for_function("() => document.getElementById('notice').textContent.startsWith('Accepted')")
        _assert_readable(page.text_content("#notice"), "the notice")
        page.wait_for_selector("#decisions .decision")
        _assert_readable(page.text_content("#decisions"), "the decisions")
        # the diagram's hover label of the grid's worst outage, as the operator sees it
        page.mouse.move(0, 0)
        page.wait_for_function("() => document.getElementById('diagram').dataset.highlight === ''")
        page.evaluate(HOVER_LINE, outage["outage"])
        label = page.wait_for_selector("#diagram .hoverlayer .hovertext").text_content()
        assert label.startswith(f"{NAMES['lines'][outage['outage']]} (id {outage['outage']}, "), label
        _save(page, artifacts, "console-names.png", down_to="#rejected")
        page.goto(f"{server}/live/{session_id}/summary/")
        page.wait_for_selector("#summary-alarms")
        _save(page, artifacts, "shift-summary.png")
