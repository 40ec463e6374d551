"""The Shares page's servable figures (matcher.servability.reach) follow the computing elements:
each definition's verdict is kept between requests only for the CEs it was found with."""

from matcher.models import ComputingElement


def _lhcb_user(api, users) -> dict:
    data = api(users["admin"]).get("/api/v1/shares/").data
    return next(g for g in data["groups"] if g["group"] == "lhcb_user")


def test_waiting_work_servable_before_the_ces_are_banned_is_blocked_after_and_again_servable(
    submit, api, users
):
    for _ in range(3):
        submit("alice", cpu_time=100)
    before = _lhcb_user(api, users)
    assert before["waiting_jobs"] == 3
    assert before["servable_jobs"] == 3 and before["blocked"] == {}

    ComputingElement.objects.update(status=ComputingElement.Status.BANNED)
    banned = _lhcb_user(api, users)
    assert banned["servable_jobs"] == 0
    assert banned["blocked"] == {"NoCE": 3}
    assert banned["slots"] == 0

    ComputingElement.objects.update(status=ComputingElement.Status.ACTIVE)
    assert _lhcb_user(api, users)["servable_jobs"] == 3
