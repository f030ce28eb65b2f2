"""The static copy of plotly.js's own style sheet matches the plotly.js the pages load, and the
pages' head holds an element for every other style element plotly.js would inject (else the
Content-Security-Policy refuses it: see templates/plotly_head.html)."""

from __future__ import annotations

from tests.browser.plotly_css import OUT, ROOT, injected_styles, other_style_ids, plotly_css


def test_the_static_plotly_css_is_current():
    styles = injected_styles()
    assert (OUT / "plotly.css").read_text() == plotly_css(styles), "run: python -m tests.browser.plotly_css"
    head = (ROOT / "templates" / "plotly_head.html").read_text()
    assert all(f'id="{element_id}"' in head for element_id in other_style_ids(styles))
