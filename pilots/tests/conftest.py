"""The sandbox fixtures (a test's own sandbox storage, a pilot over the API) for the tests of
the pilots' side of jobs' payloads."""

from sandboxes.tests.conftest import pilot, sandbox_root  # noqa: F401  (fixtures)
