"""The Content-Security-Policy holds on every page of every role: Chromium reports no violation
(no inline script or style, no eval, nothing from elsewhere) while each page loads, draws its
charts and opens its socket.

The pages are every GET route of the URL map (the route table that
``tests/webapp/test_route_coverage.py`` proves complete), visited by each role and by a user
without one (who gets the 403 page), plus the login page, the lockout page and the admin.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from axes.models import AccessAttempt
from django.core.management import call_command
from django.utils import timezone

from ace_core.events import MetricsEvent
from tests.browser.conftest import browser, in_thread, log_in
from tests.webapp.conftest import trainer_refinement
from tests.webapp.operations.conftest import run_feed
from tests.webapp.test_route_coverage import ROUTES, _url, stand_in_mine, stand_in_recommendation

PASSWORD = "csp-browser-pass-123"
DOWNLOADS = {"audit:export", "operations:export", "training:run_metrics_csv", "training:run_episodes_csv"}
"""GET routes that answer a file, not a page"""
PAGES = sorted(name for name, (_, method) in ROUTES.items() if method == "get" and name not in DOWNLOADS)
VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__csp.push(e.violatedDirective + " " + (e.blockedURI || "inline") + " " + (e.sourceFile || "") + ":" + e.lineNumber);
});
"""


def _set_up(refinements: list[Any]) -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    from webapp.accounts.services import role_groups_sync
    from webapp.api.services import token_create
    from webapp.operations.models import Alarm
    from webapp.review.services import refinement_record
    from webapp.training.services import demo_live as demo
    from webapp.training.services.events import metrics_record

    call_command("seed_demo", password=PASSWORD)
    role_groups_sync()
    get_user_model().objects.create_user(username="norole", password=PASSWORD)
    get_user_model().objects.create_superuser(username="root", password=PASSWORD)
    session = demo.live_demo_setup(policy_steps=0, log=lambda _: None)
    run_feed(session, 3)
    run = session.deployment.checkpoint.run
    for step in (100, 200, 300):
        metrics_record(
            run_id=run.pk,
            event=MetricsEvent(
                step=step, values={"charts/episodic_return": step / 10, "losses/qf1_loss": 1.0}
            ),
        )
    refinement = refinement_record(run_id=run.pk, event=trainer_refinement(refinements, 50))
    alarm = Alarm.objects.create(
        session=session, step=1, kind="overload", message="m", raised_at=timezone.now()
    )
    objects = {
        "run": run,
        "refinement": refinement,
        "checkpoint": session.deployment.checkpoint,
        "deployment": session.deployment,
        "session": session,
        "alarm": alarm,
        # a calm step may show no card (nothing beats doing nothing): a row stands in for the URLs
        "rec": session.recommendations.first() or stand_in_recommendation(session),
        "token": token_create(user=get_user_model().objects.get(username="root"), name="csp")[0],
        "mine": stand_in_mine(get_user_model().objects.get(username="root")),
        # a locked (username, address) pair, for the lockouts page's unlock URL
        "attempt": AccessAttempt.objects.create(
            username="someone", ip_address="10.9.9.9", user_agent="", failures_since_start=1
        ),
    }
    return {name: _url(name, objects) for name in PAGES}


def _csp_console(page: Any) -> list[str]:
    """The page's console messages about the Content-Security-Policy, as they come."""
    console: list[str] = []
    page.on(
        "console",
        lambda message: console.append(message.text) if "Content Security" in message.text else None,
    )
    return console


def _open(context: Any, url: str, label: str) -> tuple[Any, list[str]]:
    """A new tab on ``url``, loaded, its CSP header checked and its console's CSP messages kept."""
    page = context.new_page()
    console = _csp_console(page)
    response = page.goto(url)
    assert response is not None and response.status < 500, (label, response and response.status)
    header = response.headers.get("content-security-policy", "")
    assert "script-src 'self'" in header and "unsafe" not in header, (label, header)
    return page, console


def _visit_all(context: Any, urls: dict[str, str], seen: dict[str, list[str]]) -> None:
    """Open every page in its own tab, then read each tab's violations once its network is idle.

    The pages' scripts draw charts and open sockets after load; networkidle comes 500 ms after a
    tab's last request, long after a violation's event. The tabs wait side by side, so the pages
    of a role cost one such wait, not one each.
    """
    tabs = {label: _open(context, url, label) for label, url in urls.items()}
    for label, (page, console) in tabs.items():
        page.wait_for_load_state("networkidle")
        seen[label] = page.evaluate("window.__csp") + console
        page.close()


def test_no_page_of_any_role_violates_the_content_security_policy(
    server, trainer_refinements, tmp_path, artifacts, settings
):
    urls = in_thread(lambda: _set_up(trainer_refinements))
    seen: dict[str, list[str]] = {}
    roles = ["engineer", "reviewer", "operator", "norole", "root"]
    for role in roles:
        with browser(tmp_path / role) as page:
            page.context.add_init_script(VIOLATIONS)
            _visit_all(page.context, {f"{role} login": f"{server}/login/"}, seen)
            log_in(page, server, role, PASSWORD)
            pages = {f"{role} {name}": f"{server}{urls[name]}" for name in PAGES}
            if role == "root":
                for path in ("/admin/", "/admin/axes/accessattempt/", "/admin/training/trainingrun/"):
                    pages[f"{role} {path}"] = f"{server}{path}"
            _visit_all(page.context, pages, seen)
            page.goto(f"{server}{urls[PAGES[-1]]}")
            page.screenshot(path=str(artifacts / f"{role}-last.png"))
    with browser(tmp_path / "locked") as page:
        console = _csp_console(page)
        page.add_init_script(VIOLATIONS)
        for _ in range(settings.AXES_FAILURE_LIMIT + 1):
            page.goto(f"{server}/login/")
            page.fill("#id_username", "operator")
            page.fill("#id_password", "wrong")
            page.click("button[type=submit]")
            page.wait_for_load_state()
        assert page.locator("#locked-out").is_visible()
        seen["lockout page"] = page.evaluate("window.__csp") + console
    (artifacts / "csp.json").write_text(json.dumps(seen, indent=1))
    assert len(seen) == len(roles) * (len(PAGES) + 1) + 3 + 1
    violations = {label: found for label, found in seen.items() if found}
    assert not violations, violations


def test_pages_are_free_of_inline_scripts_styles_and_handlers():
    """Templates carry no inline script, style block, style attribute or on* handler (only JSON
    data blocks from json_script)."""
    import re

    root = Path(__file__).resolve().parents[2] / "templates"
    inline = re.compile(
        r"<script(?![^>]*\bsrc=)(?![^>]*application/json)|<style|\sstyle=|\son[a-z]+=", re.IGNORECASE
    )
    found = {
        str(path.relative_to(root)): inline.findall(path.read_text())
        for path in root.rglob("*.html")
        if inline.search(path.read_text())
    }
    assert not found, found
