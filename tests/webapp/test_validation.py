"""The input rules of docs/web.md, checked in one place (``webapp.validation``): numbers in ASCII
digits without surrounding whitespace, a ``+`` or a negative zero; an expert's budget bounded;
refusals that name the data and runs folders without showing where they are on the server."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from tests.webapp.conftest import client_for
from webapp.api.models import ApiToken
from webapp.validation import (
    MAX_EXPERT_BUDGET,
    AsciiFloatField,
    AsciiIntegerField,
    InputError,
    confined_file,
    expert_spec,
    json_object,
    model_reference,
    query_id,
)

REFUSED_NUMBERS = [" 12 ", "12 ", "\t12", "12\n", "+100", "-0", "-00", "１２", "١٢", "1_000", ""]


@pytest.mark.parametrize("value", REFUSED_NUMBERS)
def test_integer_fields_refuse_spaces_plus_negative_zero_and_other_digits(value):
    field = AsciiIntegerField(min_value=-100, max_value=100, required=False)
    if value == "":
        assert field.clean(value) is None  # empty: left out
        return
    with pytest.raises(ValidationError, match="Enter a whole number in digits 0-9; accepted: -100 to 100"):
        field.clean(value)


@pytest.mark.parametrize("value", [" 0.5", "0.5 ", "+0.5", "-0", "-0.0", "-.0", "-0e3", "０.５"])
def test_number_fields_refuse_spaces_plus_negative_zero_and_other_digits(value):
    with pytest.raises(ValidationError, match="digits 0-9"):
        AsciiFloatField(min_value=-1, max_value=1).clean(value)


def test_plain_numbers_are_accepted():
    assert AsciiIntegerField(min_value=-5).clean("-5") == -5
    assert AsciiIntegerField().clean("0") == 0 and AsciiIntegerField().clean(12) == 12
    assert AsciiFloatField(min_value=-1, max_value=1).clean("-0.5") == -0.5
    assert AsciiFloatField(min_value=0, max_value=1).clean("1e-3") == 0.001


def test_json_bodies_refuse_negative_zero():
    for body in (b'{"step": -0}', b'{"speed_seconds": -0.0}', b'{"x": [-0e1]}'):
        with pytest.raises(InputError, match="is refused; accepted: 0"):
            json_object(body)
    assert json_object(b'{"step": 0, "x": -1.5}') == {"step": 0, "x": -1.5}


def test_query_ids_are_plain_digits():
    assert query_id("12") == 12
    assert [query_id(value) for value in (" 12", "12 ", "+12", "-1", "１２")] == [None] * 5


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        (
            "greedy:100000000000000000000",
            f"budget=100000000000000000000 is too large; accepted: at most {MAX_EXPERT_BUDGET}",
        ),
        ("greedy:budget=100001", "is too large"),
        ("greedy: 64", "budget=' 64' is refused; accepted: numbers in digits 0-9, without spaces"),
        ("greedy:+64", "budget='+64' is refused"),
        ("greedy:１２", "budget='１２' is refused"),
        ("greedy:budget=64,threshold=-0", "threshold='-0' is refused"),
        ("greedy:budget=64,lines= 2", "lines=' 2' is refused"),
    ],
)
def test_expert_specs_refuse_lax_and_unbounded_numbers(spec, reason):
    with pytest.raises(InputError, match=reason.replace("+", r"\+")):
        expert_spec(spec, "expert")


def test_plain_expert_specs_pass():
    for spec in (
        "greedy",
        "greedy:64",
        f"greedy:{MAX_EXPERT_BUDGET}",
        "greedy:budget=500,lines=1,threshold=0.95",
    ):
        assert expert_spec(spec) == spec
    assert expert_spec("greedy:actions=mine/action_set.json") == "greedy:actions=mine/action_set.json"


def test_path_refusals_do_not_show_the_servers_folders(settings, tmp_path):
    settings.GRIDACE_DATA_DIR = tmp_path / "var" / "data"
    settings.GRIDACE_DATA_DIR.mkdir(parents=True)
    messages = []
    for check, value in (
        (confined_file, "/etc/passwd"),
        (confined_file, "missing.txt"),
        (confined_file, str(settings.GRIDACE_DATA_DIR / "sub" / "missing.txt")),
        (model_reference, "/etc"),
    ):
        with pytest.raises(InputError) as refused:
            check(value, "action_subset")
        messages.append(str(refused.value))
    assert not [m for m in messages if str(tmp_path) in m or "var/data" in m], messages
    assert "'sub/missing.txt' is not a file in the data folder or the runs folder" in messages[2]


@pytest.mark.django_db
@pytest.mark.parametrize("days", ["１２", " 12 ", "+12", "-0"])
def test_a_token_expiry_in_other_digits_is_refused(engineer, days):
    response = client_for(engineer).post(reverse("api:token_list"), {"name": "ems", "expires_in_days": days})
    assert response.status_code == 400 and "digits 0-9" in response.content.decode()
    assert not ApiToken.objects.exists()


@pytest.mark.django_db
def test_the_api_refuses_an_unbounded_expert_budget(engineer):
    from tests.webapp.api.conftest import ApiClient
    from webapp.api.services import token_create

    api = ApiClient(token_create(user=engineer, name="t")[1])
    response = api.post("/runs", {"config": {"pretrain_expert": "greedy:100000000000000000000"}})
    assert response.status_code == 400, response.content
    assert response.json()["field"] == "config.pretrain_expert"
    assert (
        "too large" in response.json()["error"]
        and response.json()["accepted"] == f"at most {MAX_EXPERT_BUDGET}"
    )
