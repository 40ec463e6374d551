"""The API's OpenAPI description as a generated client reads it (REST_FRAMEWORK's
DEFAULT_SCHEMA_CLASS, SPECTACULAR_SETTINGS).

Every operation carries a summary and a description written for the API's users: the standard
actions of a model's viewset get them from the model's names (and the viewset's own docstring,
which is written for them); every other action names its own with `extend_schema`. Each error
an operation can answer is listed with its body: `Error` (`{"detail": ...}`, what the exception
handler and the error pages answer) or, for a 400, `ValidationError` (each bad field or
parameter with its messages). Ids in paths are integers.
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace

from django.db import models
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as _AutoSchema
from drf_spectacular.plumbing import (
    ResolvedComponent,
    get_override,
    get_view_model,
    is_list_serializer,
)
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import SAFE_METHODS, AllowAny

ERROR = ResolvedComponent(
    name="Error",
    type=ResolvedComponent.SCHEMA,
    object="Error",
    schema={
        "type": "object",
        "description": "An error: what went wrong, in the client's terms.",
        "properties": {"detail": {"type": "string"}},
        "required": ["detail"],
    },
)
VALIDATION_ERROR = ResolvedComponent(
    name="ValidationError",
    type=ResolvedComponent.SCHEMA,
    object="ValidationError",
    schema={
        "type": "object",
        "description": (
            "A refused request: each bad field of the body or bad query parameter, by name, "
            "with its messages (a list of strings; for a nested object, an object of the same "
            "form); `non_field_errors` for what concerns the body as a whole; `detail` alone "
            "for a body that could not be read at all."
        ),
        "additionalProperties": {},
    },
)
ERROR_DESCRIPTIONS = {
    400: "The request is refused: the body names each bad field or parameter.",
    401: "Not authenticated: send `Authorization: Token <key>` (or `Bearer <key or token>`).",
    403: "Authenticated, but not allowed to do this.",
    404: "No such object, or not one you may see.",
    405: "The method is not allowed here.",
    409: "The object's state does not allow this now.",
    413: "The request body is too large.",
    415: "The request body's content type is not one this operation reads.",
    429: "Too many requests: retry after the `Retry-After` header's seconds.",
    503: "The service cannot answer now: retry after the `Retry-After` header's seconds.",
}
# Standard actions: (summary, description) from the model's names.
STANDARD = {
    "list": ("List {plural}", "{Plural}, a page at a time."),
    "retrieve": ("Read a {singular}", "One {singular}, by its id."),
    "create": ("Create a {singular}", "Create a {singular} from the body's fields."),
    "update": ("Replace a {singular}", "Replace a {singular}: every writable field is given."),
    "partial_update": (
        "Change a {singular}",
        "Change a {singular}: only the fields given change.",
    ),
    "destroy": (
        "Delete a {singular}",
        "Delete a {singular}. One that other records still need answers 409.",
    ),
    "export": ("Export {plural}", ""),
}
NAMES = {"panda queue": ("PanDA queue", "PanDA queues")}
LIST_PAGING = (
    "Paged by cursor: follow `next` (null on the last page); `page_size` sets the rows per "
    "page; `count=true` adds `count`, the number of rows the filters select in all."
)
STAFF_ONLY = "Staff only."


class AutoSchema(_AutoSchema):
    def _names(self) -> tuple[str, str] | None:
        model = get_view_model(self.view, emit_warnings=False)
        if model is None:
            return None
        singular = str(model._meta.verbose_name)
        plural = str(model._meta.verbose_name_plural)
        return NAMES.get(singular, (singular, plural))

    def _action(self) -> str:
        return getattr(self.view, "action", None) or self.method.lower()

    def get_summary(self) -> str | None:
        template = STANDARD.get(self._action())
        names = self._names()
        if template is None or names is None:
            return None
        return template[0].format(singular=names[0], plural=names[1])

    def get_description(self) -> str:
        action = self._action()
        handler = getattr(self.view, action, None)
        own = _own_doc(handler)
        if own:
            return own
        sentences = []
        names = self._names()
        if action in STANDARD and names is not None:
            text = STANDARD[action][1]
            sentences.append(
                text.format(singular=names[0], plural=names[1], Plural=names[1].capitalize())
            )
        if action == "list" and self._is_list_view() and self._get_paginator() is not None:
            sentences.append(LIST_PAGING)
        if self._staff_only():
            sentences.append(STAFF_ONLY)
        parts = [_own_doc(type(self.view)), " ".join(t for t in sentences if t)]
        return "\n\n".join(p for p in parts if p)

    def _is_list_view(self, serializer=None) -> bool:
        """A plain ViewSet's `list` answers what its response names: one object (a summary, a
        report) unless that is a list."""
        if isinstance(self.view, GenericAPIView) or getattr(self.view, "action", None) != "list":
            return super()._is_list_view(serializer)
        if serializer is None:
            serializer = self.get_response_serializers()
        if isinstance(serializer, dict) and serializer:
            serializer = {str(code): s for code, s in serializer.items()}
            serializer = serializer[min(serializer)]
        return is_list_serializer(serializer)

    def _map_basic_serializer(self, serializer, direction):
        """A component's description is its serializer's own docstring, if any: what one
        inherits from a mixin tells developers how the mixin works."""
        schema = super()._map_basic_serializer(serializer, direction)
        description = get_override(serializer, "description", _own_doc(type(serializer)))
        schema.pop("description", None)
        if description:
            schema["description"] = description
        return schema

    def _permission_classes(self) -> list[type]:
        return [type(p) for p in self.view.get_permissions()]

    def _staff_only(self) -> bool:
        from api.core.permissions import StaffOnly, StaffWriteOrReadOnly

        classes = self._permission_classes()
        unsafe = self.method not in SAFE_METHODS
        return StaffOnly in classes or (unsafe and StaffWriteOrReadOnly in classes)

    def _allows_any_reader(self) -> bool:
        """Whether the view's permissions let every signed-in user make this request (its
        objects' own rules aside): asked of them with an unprivileged user."""
        request = SimpleNamespace(
            method=self.method, user=_Unprivileged(), auth=None, query_params={}, data={}
        )
        for permission in self.view.get_permissions():
            try:
                if not permission.has_permission(request, self.view):
                    return False
            except Exception:
                return False
        return True

    def _resolve_path_parameters(self, variables):
        parameters = super()._resolve_path_parameters(variables)
        model = get_view_model(self.view, emit_warnings=False)
        pk = model._meta.pk if model is not None else None
        lookup = getattr(self.view, "lookup_url_kwarg", None) or getattr(
            self.view, "lookup_field", "pk"
        )
        for parameter in parameters:
            name = parameter["name"]
            is_pk = name == "id" or (
                name == lookup and getattr(self.view, "lookup_field", "pk") in ("pk", "id")
            )
            if is_pk and isinstance(
                pk, (models.AutoField, models.BigAutoField, models.IntegerField)
            ):
                parameter["schema"] = {"type": "integer"}
                parameter.setdefault("description", f"The {self._names()[0]}'s id.")
        return parameters

    def _error_codes(self, operation: dict) -> set[int]:
        """The errors this operation can answer, from what the view checks."""
        codes = set()
        classes = self._permission_classes()
        public = bool(classes) and all(issubclass(c, AllowAny) for c in classes)
        if not public:
            codes.add(401)
            # Unsafe methods also answer 403 to a session without its CSRF token.
            if self.method not in SAFE_METHODS or not self._allows_any_reader():
                codes.add(403)
        reads_query = any(p["in"] == "query" for p in operation.get("parameters", ()))
        if "requestBody" in operation or reads_query or _reads_query(self.view):
            codes.add(400)
        if "requestBody" in operation:
            codes.add(415)
        # A `format` no renderer has answers 404, as the framework does.
        if "{" in self.path or any(p["name"] == "format" for p in operation.get("parameters", ())):
            codes.add(404)
        if self._action() == "destroy":
            codes.add(409)  # still in use by other records
        if self.view.get_throttles():
            codes.add(429)
        return codes

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        body = operation.get("requestBody", {}).get("content", {})
        if "$ref" in body.get("text/plain", {}).get("schema", {}):
            # A viewset's text parser (the JDL of a submission) reads no object of its actions.
            del body["text/plain"]
        responses = operation["responses"]
        for code in sorted(self._error_codes(operation)):
            responses.setdefault(str(code), {"description": ERROR_DESCRIPTIONS[code]})
        for code, response in responses.items():
            status = int(code) if code.isdigit() else 0
            if status < 400:
                continue
            component = VALIDATION_ERROR if status == 400 else ERROR
            registry.register_on_missing(component)
            if not response.get("description"):
                response["description"] = ERROR_DESCRIPTIONS.get(status, "An error.")
            content = response.setdefault("content", {})
            json_types = [t for t in content if t.endswith("json")] or ["application/json"]
            for media_type in json_types:
                if not content.get(media_type, {}).get("schema"):
                    content.setdefault(media_type, {})["schema"] = component.ref
            for media_type in list(content):
                if media_type not in json_types and not content[media_type].get("schema"):
                    del content[media_type]
        operation["responses"] = dict(sorted(responses.items()))
        return operation


class _Unprivileged:
    is_authenticated = True
    is_active = True
    is_staff = False
    is_superuser = False
    pk = id = None

    def has_perm(self, *args, **kwargs) -> bool:
        return False

    def get_username(self) -> str:
        return ""


def _reads_query(view) -> bool:
    """Views that answer 400 to any unknown query parameter, declared or not."""
    from web.core.filters import StrictFilterBackend, StrictQueryMixin

    return isinstance(view, StrictQueryMixin) or any(
        issubclass(b, StrictFilterBackend) for b in getattr(view, "filter_backends", ())
    )


def _own_doc(obj) -> str:
    """The docstring written on the class or function itself: what a viewset inherits from a
    mixin describes the mixin to its developers, not the operation to its users."""
    if obj is None:
        return ""
    if inspect.isclass(obj):
        doc = obj.__dict__.get("__doc__")
    else:
        doc = getattr(obj, "__doc__", None)
        module = getattr(obj, "__module__", "") or ""
        if not module.startswith(("api.", "web.")):
            return ""  # DRF's own mixins' methods
    return inspect.cleandoc(doc) if doc else ""


class BearerScheme(OpenApiAuthenticationExtension):
    target_class = "api.core.authentication.BearerAuthentication"
    name = "bearerAuth"
    priority = 1  # over drf-spectacular's scheme for TokenAuthentication's subclasses

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "`Authorization: Bearer <credential>`: an API token's key, or a token this "
                "server signed."
            ),
        }


class TokenScheme(OpenApiAuthenticationExtension):
    target_class = "api.core.authentication.CachedTokenAuthentication"
    name = "tokenAuth"
    priority = 1

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": (
                "`Authorization: Token <key>`, with the key from POST /api/v1/auth/token/."
            ),
        }
