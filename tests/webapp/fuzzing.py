"""Property-based fuzzing of the site's inputs: what to send to each route, found from the URL map.

Every route of the URL map (and every websocket route) is fuzzed; how is decided from its view,
so a new route is fuzzed without being listed here:

* a view of the console's JSON endpoints (``_JsonAction``) gets JSON bodies: arbitrary JSON,
  deeply nested or huge values, and near-valid objects with the fields the endpoints read given
  wrong types and out-of-range values;
* any other view that takes POST gets form data: the fields of its form (``FORMS``), when it has
  one, with text, huge and non-ASCII numbers, plus unknown fields;
* every view that takes GET gets query strings with the parameters pages read;
* integer path arguments are the real objects' ids or any other number (up to 2**70).

``GRIDACE_FUZZ_EXAMPLES`` sets the examples per route and method (default 20, about a minute
here; 200 or more for a deep run).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any
from urllib.parse import quote

from django.apps import apps
from django.db import connection
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.urls.converters import IntConverter
from hypothesis import strategies as st

from webapp.accounts.forms import LoginForm
from webapp.operations.forms import SessionForkForm, SessionStartForm
from webapp.operations.views import _JsonAction
from webapp.review.forms import DecisionForm
from webapp.training.forms.deployments import DeployForm, RollbackForm
from webapp.training.forms.evaluations import EvaluationForm
from webapp.training.forms.launch import TrainConfigForm
from webapp.training.forms.mines import MineForm
from webapp.training.run_forms import RunNotesForm

EXAMPLES = int(os.environ.get("GRIDACE_FUZZ_EXAMPLES", "20"))

FORMS = {
    "accounts:login": LoginForm,
    "training:run_launch": TrainConfigForm,
    "training:run_evaluate": EvaluationForm,
    "training:run_notes": RunNotesForm,
    "training:checkpoint_deploy": DeployForm,
    "training:deployment_rollback": RollbackForm,
    "training:mine_launch": MineForm,
    "review:refinement_decide": DecisionForm,
    "operations:session_start": SessionStartForm,
    "operations:fork": SessionForkForm,
}
"""the form a POST route reads; POST routes not listed get arbitrary fields"""

QUERY_KEYS = [
    "status",
    "page",
    "grid",
    "recipe",
    "tag",
    "sort",
    "keys",
    "run",
    "mine",
    "env",
    "simulation",
    "action",
    "actor",
    "target_type",
    "target_id",
    "next",
]
JSON_KEYS = ["step", "recommendation", "decision", "comment", "action", "command", "speed_seconds"]
UNTRACKED = {
    "sessions.session",
    "axes.accessattempt",
    "axes.accessattemptexpiration",
    "axes.accesslog",
    "axes.accessfailurelog",
    "accounts.securityevent",
}
"""tables a refused request may still write: the session (messages), the login attempts
(throttling), the security log (refused API requests)"""


# ----- the routes ----------------------------------------------------------------------------
_templates: dict[str, str] = {}


def routes() -> dict[str, URLPattern]:
    """Every route of the URL map but the Django admin's, by ``namespace:name`` (an unnamed route
    by its path)."""
    found: dict[str, URLPattern] = {}

    def walk(patterns: list, namespace: str, prefix: str) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                if pattern.namespace != "admin":
                    inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                    walk(pattern.url_patterns, inner, prefix + str(pattern.pattern))
            else:
                key = f"{namespace}{pattern.name}" if pattern.name else prefix + str(pattern.pattern)
                found[key] = pattern
                _templates[key] = "/" + prefix + str(pattern.pattern)

    walk(get_resolver().url_patterns, "", "")
    return found


def url_for(key: str, pattern: URLPattern, kwargs: dict[str, Any]) -> str:
    """The route's address with ``kwargs`` in its path."""
    if pattern.name:
        return reverse(key, kwargs=kwargs)
    routes()
    return re.sub(r"<(?:\w+:)?(\w+)>", lambda m: quote(str(kwargs[m.group(1)])), _templates[key])


def view_class(pattern: URLPattern) -> type | None:
    """The class of a class-based view; None for a function view (e.g. an API router's)."""
    return getattr(pattern.callback, "view_class", None)


def methods(pattern: URLPattern) -> list[str]:
    cls = view_class(pattern)
    if cls is None:
        return ["get", "post"]  # a function view says nothing of its methods: try both
    return [m for m in ("get", "post") if hasattr(cls, m) and m in cls.http_method_names]


def body_kind(pattern: URLPattern, method: str) -> str:
    """How a route is fuzzed: "json", "form" or "query"."""
    if method == "get":
        return "query"
    cls = view_class(pattern)
    return "json" if cls is None or issubclass(cls, _JsonAction) else "form"


# ----- values ----------------------------------------------------------------------------------
NUMBERS_AS_TEXT = st.sampled_from(
    [
        "0",
        "-1",
        "1",
        "3",
        "1e12",
        "10" * 12,
        str(10**20),
        str(2**63),
        "١٢",
        "１０",
        "²",
        "nan",
        "inf",
        "-0",
        "0x10",
        " 7 ",
    ]
)
TEXT = st.one_of(
    st.text(max_size=40), NUMBERS_AS_TEXT, st.just("x" * 5000), st.sampled_from(["\x00", "run.launch\x00"])
)
JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
ACTIONS = st.fixed_dictionaries(
    {"kind": st.one_of(st.sampled_from(["nothing", "index", "line", "topology", "bogus"]), JSON_SCALARS)},
    optional={
        "index": JSON_SCALARS,
        "line": JSON_SCALARS,
        "status": st.one_of(st.sampled_from(["connect", "disconnect"]), JSON_SCALARS),
        "substation": JSON_SCALARS,
        "set": st.one_of(st.lists(st.lists(JSON_SCALARS, max_size=3), max_size=4), JSON_VALUES),
    },
)


def json_bodies() -> st.SearchStrategy[bytes]:
    near_valid = st.dictionaries(
        st.sampled_from(JSON_KEYS), st.one_of(JSON_VALUES, ACTIONS), max_size=len(JSON_KEYS)
    )
    return st.one_of(
        near_valid.map(lambda d: json.dumps(d).encode()),
        JSON_VALUES.map(lambda v: json.dumps(v).encode()),
        st.integers(min_value=1, max_value=60_000).map(lambda n: b"[" * n),
        st.just(b'{"step": ' + b"9" * 5000 + b"}"),
        st.just(b'{"step": NaN, "speed_seconds": Infinity}'),
        st.binary(max_size=64),
    )


def form_data(form_class: type | None) -> st.SearchStrategy[dict[str, str]]:
    names = list(form_class().fields) if form_class is not None else []
    known = st.dictionaries(st.sampled_from(names), TEXT, max_size=len(names)) if names else st.just({})
    extra = st.dictionaries(st.text(min_size=1, max_size=10), TEXT, max_size=3)
    return st.tuples(known, extra).map(lambda pair: {**pair[1], **pair[0]})


def query_data() -> st.SearchStrategy[dict[str, str]]:
    return st.dictionaries(st.one_of(st.sampled_from(QUERY_KEYS), st.text(max_size=8)), TEXT, max_size=4)


def path_ids(real: int) -> st.SearchStrategy[int]:
    """Mostly the real object's id (so the body is what gets fuzzed), else any id up to 2**70."""
    return st.one_of(st.just(real), st.just(real), st.just(real), st.integers(min_value=0, max_value=2**70))


def path_arguments(pattern: URLPattern, real: dict[str, int]) -> st.SearchStrategy[dict[str, Any]]:
    """A value for each argument of the route's path: ids for ``<int:...>``, else any text its
    converter matches."""
    strategies = {}
    # a regex route (re_path) names its arguments as groups, not converters: any path-safe text
    for name in getattr(pattern.pattern.regex, "groupindex", {}):
        strategies[name] = st.from_regex(r"[A-Za-z0-9_./~-]{0,40}", fullmatch=True)
    for name, converter in pattern.pattern.converters.items():
        if isinstance(converter, IntConverter):
            strategies[name] = path_ids(real.get(name, 1))
        else:
            strategies[name] = st.from_regex(f"^{converter.regex}$", fullmatch=True).filter(bool)
    return st.fixed_dictionaries(strategies)


# ----- what a refusal must leave alone -----------------------------------------------------------
def database_fingerprint() -> dict[str, str]:
    """A digest of every row of every table a request could write (but ``UNTRACKED``), in one
    query: each table's rows as text, in primary-key order, hashed by the database."""
    models = [
        model
        for model in apps.get_models()
        if model._meta.label_lower not in UNTRACKED and not model._meta.proxy
    ]
    quote = connection.ops.quote_name
    digests = " UNION ALL ".join(
        f"SELECT %s, md5(coalesce(string_agg(t::text, '|' ORDER BY t.{quote(model._meta.pk.column)}), ''))"
        f" FROM {quote(model._meta.db_table)} t"
        for model in models
    )
    with connection.cursor() as cursor:
        cursor.execute(digests, [model._meta.label_lower for model in models])
        return dict(cursor.fetchall())


def changed_tables(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(label for label in before if before[label] != after.get(label))
