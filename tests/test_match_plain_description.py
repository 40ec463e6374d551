"""The pilots' short path reads a match request's body in its plain form without DRF
(api.pilots.wsgi.plain_description): for every body it either gives exactly what
ResourceDescriptionSerializer validates it to, or gives nothing and leaves the body to the
serializer. Bodies that are not plain (blanks to strip, a JSON null, an unknown key, a private
pilot's owner, a site that does not exist...) must never be taken as plain."""

import json

import pytest

from api.matcher.resources import ResourceDescriptionSerializer
from api.pilots.wsgi import plain_description

pytestmark = pytest.mark.django_db

CERN = {"site": "LCG.CERN.ch", "grid_ce": "ce503.cern.ch", "cpu_time": 86400}
PILOT = {
    **CERN,
    "setup": "any",
    "platform": "any",
    "tag": ["any"],
    "pilot_type": "any",
    "pilot_reference": "bench-http",
}

PLAIN = {
    "the bench's pilot": PILOT,
    "a site and CPU time alone": {"site": "LCG.CERN.ch", "cpu_time": 0},
    "a CE alone names its site": {"site": "any", "grid_ce": "ce503.cern.ch", "cpu_time": 5},
    "a list of platforms": {**CERN, "platform": ["el9", "el8"]},
    "an empty list of platforms": {**CERN, "platform": []},
    "an empty reference": {**CERN, "pilot_reference": ""},
    "no tags": {**CERN, "tag": []},
    "a tab inside a name": {**CERN, "pilot_reference": "a\tb"},
}

NOT_PLAIN = {
    "blanks around the site": {**CERN, "site": " LCG.CERN.ch "},
    "blanks around a tag": {**CERN, "tag": ["any "]},
    "blanks around the platform": {**CERN, "platform": " el9"},
    "a null platform": {**CERN, "platform": None},
    "a null setup": {**CERN, "setup": None},
    "a null tag list": {**CERN, "tag": None},
    "a tag that is a string": {**CERN, "tag": "any"},
    "a number as the site": {**CERN, "site": 7},
    "a CPU time given as text": {**CERN, "cpu_time": "100"},
    "a CPU time given as true": {**CERN, "cpu_time": True},
    "a negative CPU time": {**CERN, "cpu_time": -1},
    "a fractional CPU time": {**CERN, "cpu_time": 1.5},
    "no CPU time": {"site": "LCG.CERN.ch"},
    "no site": {"grid_ce": "ce503.cern.ch", "cpu_time": 5},
    "an unknown field": {**CERN, "colour": "blue"},
    "a private pilot's group": {**CERN, "owner_group": "lhcb_user"},
    "a private pilot's DN": {**CERN, "owner_dn": "/CN=alice"},
    "an unknown site": {**CERN, "site": "LCG.Nowhere.xx", "grid_ce": "any"},
    "an unknown CE": {**CERN, "grid_ce": "ce.nowhere.xx"},
    "a CE of another site": {**CERN, "site": "LCG.CNAF.it"},
    "any site and any CE": {"site": "any", "grid_ce": "any", "cpu_time": 5},
    "a NUL in the platform": {**CERN, "platform": "el9\x00"},
    "a NUL in a tag": {**CERN, "tag": ["a\x00"]},
    "a site over 128 characters": {**CERN, "site": "x" * 129},
    "a reference over 255 characters": {**CERN, "pilot_reference": "r" * 256},
    "a pilot type over 32 characters": {**CERN, "pilot_type": "p" * 33},
    "a blank site": {**CERN, "site": ""},
    "a blank tag": {**CERN, "tag": [""]},
    "a tag over 128 characters": {**CERN, "tag": ["t" * 129]},
    "201 tags": {**CERN, "tag": [f"t{i}" for i in range(201)]},
    "a name with a non-ASCII letter": {**CERN, "pilot_reference": "pilote-é"},
}


def serializer_says(body: dict):
    described = ResourceDescriptionSerializer(data=body, context={"claim": True})
    return dict(described.validated_data) if described.is_valid() else None


@pytest.mark.parametrize("name", PLAIN)
def test_a_plain_body_is_read_without_the_serializer_into_what_the_serializer_gives(world, name):
    body = PLAIN[name]
    taken = plain_description(json.dumps(body).encode())
    assert taken is not None
    assert taken == serializer_says(body)


@pytest.mark.parametrize("name", NOT_PLAIN)
def test_a_body_not_in_the_plain_form_is_left_to_the_serializer(world, name):
    assert plain_description(json.dumps(NOT_PLAIN[name]).encode()) is None


@pytest.mark.parametrize(
    "raw", [b"", b"[]", b'"site"', b"{", b'{"site": "LCG.CERN.ch", "cpu_time": 1}x', b"null"]
)
def test_a_body_that_is_not_a_json_object_is_left_to_the_parser(world, raw):
    assert plain_description(raw) is None


def test_a_ce_naming_the_site_of_a_pilot_at_any_site_is_taken_as_the_serializer_takes_it(world):
    body = {"site": "any", "grid_ce": "ce503.cern.ch", "cpu_time": 5}
    taken = plain_description(json.dumps(body).encode())
    assert taken["site"] == serializer_says(body)["site"] == "LCG.CERN.ch"
