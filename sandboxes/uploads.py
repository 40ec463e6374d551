"""An uploaded file's name as its sender gave it, and a form's files read through but not kept.

Django keeps only a name's last component and drops "." and ".."; the API's multipart parser
(api/sandboxes/parsers.py) keeps the name as sent in `sent_name`, and every check of a
sandbox's names reads it through sent_name()."""

from django.core.files.uploadhandler import FileUploadHandler


def sent_name(upload) -> str:
    """The file's name as its sender gave it."""
    return getattr(upload, "sent_name", None) or upload.name or ""


class FilesNotKept(FileUploadHandler):
    """The upload handler of a form whose files are over the limit before they are read: the
    files are read through (their bytes counted in `total`) and dropped, never spooled; the
    form's text fields are kept, so the page comes back with what was typed."""

    def __init__(self, request=None):
        super().__init__(request)
        self.total = 0

    def receive_data_chunk(self, raw_data, start):
        self.total += len(raw_data)
        return  # no other handler gets it

    def file_complete(self, file_size):
        return None  # no file


# A refused body is read through up to this many bytes: past it, the connection is dropped.
DRAIN_BYTES = 1024 * 1024 * 1024
_CHUNK = 256 * 1024


def drain(request, declared: int) -> None:
    """Read a refused request's body through (up to DRAIN_BYTES), keeping nothing: a client that
    sends its whole body before it reads the answer (Python's http.client and urllib, so the
    pilots) reads the 413 instead of a broken pipe, as a production server closes a connection
    with a body left unread."""
    if declared <= 0 or declared > DRAIN_BYTES:
        return
    try:
        while request.read(_CHUNK):
            pass
    except Exception:  # a client gone, a body shorter than declared: the answer is still 413
        pass
