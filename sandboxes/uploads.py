"""An uploaded file's name as its sender gave it. Django keeps only a name's last component and
drops "." and ".."; the API's multipart parser (api/sandboxes/parsers.py) keeps the name as sent
in `sent_name`, and every check of a sandbox's names reads it through sent_name()."""


def sent_name(upload) -> str:
    """The file's name as its sender gave it."""
    return getattr(upload, "sent_name", None) or upload.name or ""
