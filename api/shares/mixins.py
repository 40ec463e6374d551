"""Viewset pieces shared by the apps' APIs."""


class VisibleToUserMixin:
    """A viewset whose rows are those of `queryset` the requesting user may see: its model's
    queryset has `visible_to(user)` (`shares.ownership.OwnedQuerySet`, or a model's own rule).
    Other users' rows are answered as rows that do not exist (404). The schema generator's
    fake view gets an empty queryset of the model."""

    def get_queryset(self):
        qs = super().get_queryset()
        if getattr(self, "swagger_fake_view", False):
            return qs.none()
        return qs.visible_to(self.request.user)
