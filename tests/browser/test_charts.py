"""The run's charts and the comparison page, read back from plotly in Chromium: no trace joins
points across a gap in steps, episodes are points, metric names are words with their units, the
step axis title stays clear of the legend, and the controls (smoothing, log scale, x axis) act
alike on both pages."""

from __future__ import annotations

import statistics
from datetime import timedelta

import pytest
from django.utils import timezone

from ace_core.events import EpisodeEvent, MetricsEvent
from tests.browser.conftest import browser, log_in
from tests.webapp.conftest import tiny_config
from webapp.accounts.services import role_groups_sync, user_create_with_role
from webapp.training.models import MetricPoint, TrainingRun
from webapp.training.services.events import episode_record, metrics_record
from webapp.training.services.runs import run_launch

PASSWORD = "charts-browser-pass-1"
GAP_FACTOR = 2
"""a jump of more than this many times a trace's usual spacing (the median) is a gap"""

# every chart's traces, as plotly holds them, and where its axis title and legend are drawn
READ_CHARTS = """() => Array.from(document.querySelectorAll('.chart')).filter(el => el.data).map(el => {
  const box = (node) => { if (!node) return null; const r = node.getBoundingClientRect();
                          return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
  return {
    chart: el.id,
    title: (el.querySelector('.gtitle') || {}).textContent || '',
    xtitle: box(el.querySelector('.xtitle')),
    legend: box(el.querySelector('.legend')),
    traces: Array.from(el.data).map(t => ({
      name: t.name, mode: t.mode, connectgaps: t.connectgaps,
      x: Array.from(t.x), y: Array.from(t.y).map(v => (v === undefined ? null : v)),
    })),
  };
})"""


def _record_run(engineer, label: str, resumed_at: int) -> int:
    """A run with what its trainer reports: episodes at irregular steps, metrics every 50 steps,
    and nothing between ``resumed_at - 300`` and ``resumed_at`` (a resume from an earlier
    checkpoint, a stretch without reports): the gap no chart may bridge."""
    run = run_launch(config=tiny_config(steps=1000), launched_by=engineer, label=label)
    steps = [step for step in range(50, 1001, 50) if not resumed_at - 300 < step < resumed_at]
    for index, step in enumerate([60, 100, resumed_at + 85, resumed_at + 190]):
        episode_record(
            run_id=run.pk,
            event=EpisodeEvent(
                step=step,
                index=index,
                scenario="0@0+288",
                steps_survived=40 + index,
                max_steps=288,
                reward=12.5 + index,
            ),
        )
    for i, step in enumerate(steps):
        values = {
            "charts/SPS": 40.0 + i,
            "losses/qf1_loss": 1.0 / (i + 1),
            "losses/qf2_loss": 1.1 / (i + 1),
            "losses/entropy": 2.0 - 0.01 * i,
            "losses/alpha": 0.2,
            "llm/calls": float(3 * i),
            "llm/refinements": float(i),
            "llm/accepted": float(i // 2),
            "llm/acceptance_rate": 0.5,
            "llm/call_seconds": 0.8,
            "eval/validation_survival": 0.3 + 0.01 * i,
            "charts/decisions": float(8 * i),
        }
        metrics_record(run_id=run.pk, event=MetricsEvent(step=step, values=values))
    return run.pk


def _drawn_jumps(trace: dict) -> tuple[list[float], float]:
    """The step jumps a line trace draws (between points with no null between them), and the
    trace's usual spacing."""
    points = [x for x, y in zip(trace["x"], trace["y"]) if y is not None]
    spacing = statistics.median([b - a for a, b in zip(points, points[1:]) if b > a] or [0])
    jumps = [
        b[0] - a[0]
        for a, b in zip(zip(trace["x"], trace["y"]), zip(trace["x"][1:], trace["y"][1:]))
        if a[1] is not None and b[1] is not None
    ]
    return jumps, spacing


def _check_charts(charts: list[dict]) -> int:
    """Assert no trace joins points across a gap; returns how many gaps were left open."""
    gaps = 0
    for chart in charts:
        for trace in chart["traces"]:
            name = f"{chart['chart']}: {trace['name']}"
            assert trace["connectgaps"] is False, name
            assert "/" not in trace["name"], f"{name}: a metric key, not words"
            if "lines" not in trace["mode"]:
                continue  # points alone join nothing
            jumps, spacing = _drawn_jumps(trace)
            assert all(jump <= GAP_FACTOR * spacing for jump in jumps), (
                f"{name} joins {jumps} (spacing {spacing})"
            )
            gaps += trace["y"].count(None)
        if chart["legend"] and chart["xtitle"]:
            x, legend = chart["xtitle"], chart["legend"]
            apart = x["bottom"] <= legend["top"] or legend["bottom"] <= x["top"]
            apart = apart or x["right"] <= legend["left"] or legend["right"] <= x["left"]
            assert apart, f"{chart['chart']}: the step axis title sits on the legend"
    return gaps


def test_no_chart_joins_points_across_a_gap(process_env, server, artifacts, tmp_path):
    role_groups_sync()
    engineer = user_create_with_role(username="eng", password=PASSWORD, role="engineer")
    first = _record_run(engineer, "resumed at 700", resumed_at=700)
    second = _record_run(engineer, "resumed at 500", resumed_at=500)

    with browser(tmp_path) as page:
        log_in(page, server, "eng", PASSWORD)
        page.goto(f"{server}/runs/{first}/")
        page.wait_for_function("() => Number(document.getElementById('charts').dataset.points || 0) > 0")
        page.wait_for_selector("#chart-speed .main-svg")
        page.wait_for_selector("#chart-reward .main-svg")
        charts = page.evaluate(READ_CHARTS)
        page.screenshot(path=artifacts / "01-run-charts.png", full_page=True)
        by_id = {chart["chart"]: chart for chart in charts}
        assert _check_charts(charts) > 0  # the resume left gaps, and they stay open
        assert [t["mode"] for t in by_id["chart-reward"]["traces"]] == ["markers"]  # episodes are points
        # LLM calls and the acceptance rate on charts of their own, each in its unit
        assert [t["name"] for t in by_id["chart-llm"]["traces"]] == ["LLM calls (count)"]
        assert [t["name"] for t in by_id["chart-acceptance"]["traces"]] == [
            "accepted by simulation, as the trainer reports"
        ]
        assert {t["name"] for t in by_id["chart-losses"]["traces"]} == {
            "critic loss, first Q network",
            "critic loss, second Q network",
        }
        text = page.text_content("main")
        assert "live: live" not in text and "charts: " in text

        page.goto(f"{server}/runs/compare/?run={first}&run={second}")
        page.wait_for_selector("#compare-survival .main-svg")
        page.wait_for_selector("#compare-metric-chart .main-svg")
        page.select_option("#compare-metric", "charts/SPS")
        page.wait_for_function(
            "document.querySelector('#compare-metric-chart .gtitle').textContent.startsWith('Training speed')"
        )
        charts = page.evaluate(READ_CHARTS)
        page.screenshot(path=artifacts / "02-compare.png", full_page=True)
        assert _check_charts(charts) > 0
        menu = page.evaluate(
            """() => Array.from(document.querySelectorAll('#compare-metric optgroup')).map(
                 g => [g.label, Array.from(g.querySelectorAll('option')).map(o => o.textContent)])"""
        )
        assert [heading for heading, _ in menu] == ["training progress", "validation", "LLM", "losses"]
        assert all("/" not in option for _, options in menu for option in options)


# a chart's traces with what the controls change: opacity, legend, axis types and titles
READ_CONTROLLED = """(id) => { const el = document.getElementById(id); return {
  traces: Array.from(el.data).map(t => ({name: t.name, opacity: t.opacity === undefined ? 1 : t.opacity,
    showlegend: t.showlegend !== false, meta: t.meta || '', mode: t.mode, connectgaps: t.connectgaps,
    x: Array.from(t.x), y: Array.from(t.y).map(v => (v === undefined ? null : v))})),
  yType: el.layout.yaxis.type || 'linear', xType: el.layout.xaxis.type || 'linear',
  xTitle: el.layout.xaxis.title.text }; }"""


def test_chart_controls_smooth_switch_to_log_and_change_the_x_axis_and_the_eta_shows(
    process_env, server, artifacts, tmp_path
):
    role_groups_sync()
    engineer = user_create_with_role(username="eng", password=PASSWORD, role="engineer")
    run = _record_run(engineer, "controls", resumed_at=700)
    # training, halfway: the reports 10 s apart, 50 steps each (5 steps per second)
    TrainingRun.objects.filter(pk=run).update(status="running", total_steps=2000, progress_step=1000)
    start = timezone.now() - timedelta(hours=1)
    for index, point in enumerate(MetricPoint.objects.filter(run_id=run).order_by("step")):
        MetricPoint.objects.filter(pk=point.pk).update(created_at=start + timedelta(seconds=10 * index))

    with browser(tmp_path) as page:
        log_in(page, server, "eng", PASSWORD)
        page.goto(f"{server}/runs/{run}/")
        page.wait_for_selector("#chart-speed .main-svg")
        # the time left at the pace of the last 10 reports: 750 steps in 100 s, 1000 steps to go
        assert page.text_content("#run-eta") == "· about 2 min left at 7.5 steps per second"
        raw = page.evaluate(READ_CONTROLLED, "chart-speed")["traces"]
        assert len(raw) == 1 and raw[0]["opacity"] == 1

        # TensorBoard's EMA: the raw values faint behind the smoothed line, one legend entry each
        page.eval_on_selector(
            "#chart-smoothing", "el => { el.value = '0.6'; el.dispatchEvent(new Event('input')); }"
        )
        page.wait_for_function("() => document.getElementById('charts').dataset.smoothing === '0.6'")
        assert page.text_content("#chart-smoothing-value") == "0.60"
        speed = page.evaluate(READ_CONTROLLED, "chart-speed")["traces"]
        assert [(t["opacity"], t["showlegend"], t["meta"]) for t in speed] == [
            (0.25, False, ""),
            (1, True, "smoothed"),
        ]
        values = [v for v in speed[0]["y"] if v is not None]
        smoothed = [v for v in speed[1]["y"] if v is not None]
        expected, last = [], 0.0
        for count, value in enumerate(values, start=1):
            last = 0.6 * last + 0.4 * value
            expected.append(last / (1 - 0.6**count))
        assert smoothed == pytest.approx(expected)
        assert speed[1]["y"].count(None) == speed[0]["y"].count(None) > 0  # the gap stays open
        reward = page.evaluate(READ_CONTROLLED, "chart-reward")["traces"]
        assert [t["mode"] for t in reward] == [
            "markers",
            "lines",
        ]  # episodes: points, and their smoothed line
        _check_charts(page.evaluate(READ_CHARTS))

        page.check("#chart-log")
        page.wait_for_function("() => document.getElementById('chart-losses').layout.yaxis.type === 'log'")
        assert page.evaluate(READ_CONTROLLED, "chart-survival")["yType"] == "log"

        # decisions: read from the charts/decisions metric (8 per report of 50 steps here)
        page.select_option("#chart-x", "decisions")
        page.wait_for_function("() => document.getElementById('charts').dataset.x === 'decisions'")
        speed = page.evaluate(READ_CONTROLLED, "chart-speed")
        assert speed["xTitle"] == "decisions"
        assert [x for x, y in zip(speed["traces"][0]["x"], speed["traces"][0]["y"]) if y is not None][:3] == [
            0,
            8,
            16,
        ]
        page.select_option("#chart-x", "time")
        page.wait_for_function("() => document.getElementById('charts').dataset.x === 'time'")
        speed = page.evaluate(READ_CONTROLLED, "chart-speed")
        assert (speed["xType"], speed["xTitle"]) == ("date", "wall clock (UTC)")
        page.screenshot(path=artifacts / "01-controls.png", full_page=True)


def test_the_compare_page_smooths_switches_to_log_and_changes_the_x_axis_as_the_run_page_does(
    process_env, server, artifacts, tmp_path
):
    role_groups_sync()
    engineer = user_create_with_role(username="eng", password=PASSWORD, role="engineer")
    first = _record_run(engineer, "resumed at 700", resumed_at=700)
    second = _record_run(engineer, "resumed at 500", resumed_at=500)

    with browser(tmp_path) as page:
        log_in(page, server, "eng", PASSWORD)
        page.goto(f"{server}/runs/compare/?run={first}&run={second}")
        page.wait_for_selector("#compare-metric-chart .main-svg")
        page.select_option("#compare-metric", "charts/SPS")
        page.wait_for_function(
            "document.querySelector('#compare-metric-chart .gtitle').textContent.startsWith('Training speed')"
        )
        raw = page.evaluate(READ_CONTROLLED, "compare-metric-chart")["traces"]
        assert [(t["opacity"], t["showlegend"]) for t in raw] == [(1, True), (1, True)]  # raw by default

        # TensorBoard's EMA on every run: each run's raw values faint behind its smoothed line
        page.eval_on_selector(
            "#chart-smoothing", "el => { el.value = '0.6'; el.dispatchEvent(new Event('input')); }"
        )
        page.wait_for_function("() => document.getElementById('compare-charts').dataset.smoothing === '0.6'")
        assert page.text_content("#chart-smoothing-value") == "0.60"
        speed = page.evaluate(READ_CONTROLLED, "compare-metric-chart")["traces"]
        assert [(t["name"], t["opacity"], t["showlegend"], t["meta"]) for t in speed] == [
            (f"#{first} resumed at 700", 0.25, False, ""),
            (f"#{first} resumed at 700", 1, True, "smoothed"),
            (f"#{second} resumed at 500", 0.25, False, ""),
            (f"#{second} resumed at 500", 1, True, "smoothed"),
        ]
        for raw_trace, smooth_trace in (speed[0:2], speed[2:4]):
            values = [v for v in raw_trace["y"] if v is not None]
            expected, last = [], 0.0
            for count, value in enumerate(values, start=1):
                last = 0.6 * last + 0.4 * value
                expected.append(last / (1 - 0.6**count))
            assert [v for v in smooth_trace["y"] if v is not None] == pytest.approx(expected)
            assert smooth_trace["y"].count(None) == raw_trace["y"].count(None) > 0  # the gap stays open
        assert _check_charts(page.evaluate(READ_CHARTS)) > 0

        page.check("#chart-log")
        page.wait_for_function(
            "() => document.getElementById('compare-survival').layout.yaxis.type === 'log'"
        )
        assert page.evaluate(READ_CONTROLLED, "compare-metric-chart")["yType"] == "log"

        # decisions: each run's own, from its charts/decisions metric (8 per report of 50 steps)
        page.select_option("#chart-x", "decisions")
        page.wait_for_function("() => document.getElementById('compare-charts').dataset.x === 'decisions'")
        speed = page.evaluate(READ_CONTROLLED, "compare-metric-chart")
        assert speed["xTitle"] == "decisions"
        for trace in speed["traces"]:
            assert [x for x, y in zip(trace["x"], trace["y"]) if y is not None][:3] == [0, 8, 16]
        page.select_option("#chart-x", "time")
        page.wait_for_function("() => document.getElementById('compare-charts').dataset.x === 'time'")
        survival = page.evaluate(READ_CONTROLLED, "compare-survival")
        assert (survival["xType"], survival["xTitle"]) == ("date", "wall clock (UTC)")
        page.screenshot(path=artifacts / "03-compare-controls.png", full_page=True)
