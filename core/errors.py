"""Validation errors as people read them."""

from collections.abc import Iterator


def add_to_form(form, detail) -> None:
    """Put DRF's error detail on a Django form: on the field it concerns (the message alone:
    the field already says where), else at the top, named."""
    for where, message in error_messages(detail):
        field = where.split(".")[0].split("[")[0]
        if field in form.fields:
            form.add_error(field, message)
        else:
            form.add_error(None, f"{where}: {message}" if where else message)


def error_messages(detail, path: str = "") -> Iterator[tuple[str, str]]:
    """(where, message) pairs from DRF's nested error detail: {"inputs": {0: {"dataset":
    ["There is no dataset named x."]}}} gives ("inputs[0].dataset", "There is no ...")."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            if isinstance(key, int) or (isinstance(key, str) and key.isdigit()):
                where = f"{path}[{key}]"
            elif key == "non_field_errors":
                where = path
            else:
                where = f"{path}.{key}" if path else str(key)
            yield from error_messages(value, where)
    elif isinstance(detail, (list, tuple)):
        for i, value in enumerate(detail):  # a list of objects: one dict per item, {} if valid
            yield from error_messages(value, f"{path}[{i}]" if isinstance(value, dict) else path)
    else:
        yield path, str(detail)
