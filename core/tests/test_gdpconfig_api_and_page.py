from core import gdpconfig
from core.models import ParameterValue


def test_everyone_reads_parameters_and_only_staff_change_them(api, users):
    r = api(users["alice"]).get("/api/v1/config/")
    assert r.status_code == 200
    assert {"name": "CPUSegments", "value": [500, 5000, 50000, 300000]}.items() <= next(
        p for p in r.data if p["name"] == "CPUSegments"
    ).items()
    r = api(users["alice"]).patch("/api/v1/config/MaxRescheduling/", {"value": 5}, format="json")
    assert r.status_code == 403
    r = api(users["admin"]).patch(
        "/api/v1/config/MaxRescheduling/", {"value": 5, "comment": "x"}, format="json"
    )
    assert r.status_code == 200 and r.data["value"] == 5 and r.data["version"] == 1


def test_a_value_of_the_wrong_type_answers_400_naming_the_field(api, users):
    admin = api(users["admin"])
    r = admin.patch("/api/v1/config/CPUSegments/", {"value": [5000, 500]}, format="json")
    assert r.status_code == 400 and "strictly increasing" in str(r.data["value"])
    r = admin.patch("/api/v1/config/MaxRescheduling/", {"value": "many"}, format="json")
    assert r.status_code == 400 and "value" in r.data
    r = admin.patch("/api/v1/config/MaxRescheduling/", {"value": 1, "colour": 2}, format="json")
    assert r.status_code == 400 and "colour" in r.data
    assert not ParameterValue.objects.exists()


def test_a_value_nested_too_deeply_answers_400_naming_the_field_not_500(api, users):
    # Text that json.loads would recurse into until RecursionError, for a JSON and a list type.
    admin = api(users["admin"])
    for name in ("SubmitPoolBackends", "CPUSegments"):
        r = admin.patch(f"/api/v1/config/{name}/", {"value": "[" * 100_000}, format="json")
        assert r.status_code == 400, (name, r.status_code)
        assert "nested too deeply" in str(r.data["value"])
    assert not ParameterValue.objects.exists()


def test_json_text_is_held_to_the_api_depth_limit_of_64_levels(api, users):
    admin = api(users["admin"])
    deep = "[" * 65 + "]" * 65
    r = admin.patch("/api/v1/config/SubmitPoolBackends/", {"value": deep}, format="json")
    assert r.status_code == 400 and "nested too deeply" in str(r.data["value"])
    # Brackets inside strings are text, not nesting.
    ok = '{"gLite": "simulated", "note[": "' + "[" * 100 + '"}'
    r = admin.patch("/api/v1/config/SubmitPoolBackends/", {"value": ok}, format="json")
    assert "nested too deeply" not in str(r.data)


def test_an_unknown_parameter_answers_404(api, users):
    assert api(users["admin"]).get("/api/v1/config/Nope/").status_code == 404


def test_the_history_endpoint_lists_versions_newest_first(api, users):
    gdpconfig.set_value("MaxRescheduling", 4, users["admin"], "a")
    gdpconfig.set_value("MaxRescheduling", 6, users["admin"], "b")
    r = api(users["alice"]).get("/api/v1/config/MaxRescheduling/history/")
    assert [(v["version"], v["value"], v["changed_by"]) for v in r.data] == [
        (2, 6, "admin"),
        (1, 4, "admin"),
    ]


def test_the_config_page_is_for_staff_only(client, users):
    client.force_login(users["alice"])
    assert client.get("/config/").status_code == 403


def test_staff_edit_a_value_on_the_page_and_see_it_and_its_history(client, users):
    client.force_login(users["admin"])
    r = client.post(
        "/config/",
        {
            "name": "CPUSegments",
            "CPUSegments-value": "360, 1800, 86400",
            "CPUSegments-comment": "DIRAC",
        },
        follow=True,
    )
    assert r.status_code == 200
    assert gdpconfig.get("CPUSegments") == [360, 1800, 86400]
    page = r.content.decode()
    assert "CPUSegments is now 360, 1800, 86400" in page
    assert "DIRAC" in page  # the comment, in the history


def test_a_bad_value_on_the_page_is_shown_next_to_its_field_and_not_stored(client, users):
    client.force_login(users["admin"])
    r = client.post("/config/", {"name": "CPUSegments", "CPUSegments-value": "900, 100"})
    assert r.status_code == 400  # the page again, the error beside the field
    html = r.content.decode()
    start = html.index('id="param-CPUSegments"')
    assert "strictly increasing" in html[start : html.index("</form>", start)]
    assert not ParameterValue.objects.exists()


def test_a_value_nested_too_deeply_on_the_page_is_shown_next_to_its_field(client, users):
    client.force_login(users["admin"])
    r = client.post(
        "/config/", {"name": "SubmitPoolBackends", "SubmitPoolBackends-value": "[" * 100_000}
    )
    assert r.status_code == 400
    html = r.content.decode()
    start = html.index('id="param-SubmitPoolBackends"')
    assert "nested too deeply" in html[start : html.index("</form>", start)]
    assert not ParameterValue.objects.exists()


def test_staff_roll_back_from_the_page(client, users):
    gdpconfig.set_value("MaxRescheduling", 4)
    gdpconfig.set_value("MaxRescheduling", 8)
    client.force_login(users["admin"])
    r = client.post("/config/MaxRescheduling/rollback/1/", {"confirm": "yes"})
    assert r.status_code == 302
    assert gdpconfig.get("MaxRescheduling") == 4


def test_a_rollback_without_a_yes_asks_first_and_changes_nothing(client, users):
    gdpconfig.set_value("MaxRescheduling", 4)
    gdpconfig.set_value("MaxRescheduling", 8)
    client.force_login(users["admin"])
    r = client.post("/config/MaxRescheduling/rollback/1/")
    assert r.status_code == 200
    html = r.content.decode()
    assert "Roll MaxRescheduling back to version 1?" in html
    assert 'name="confirm" value="yes"' in html
    gdpconfig.invalidate()
    assert gdpconfig.get("MaxRescheduling") == 8
