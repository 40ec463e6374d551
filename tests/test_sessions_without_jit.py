"""The application's database sessions run without PostgreSQL's JIT compilation: its pages' short
reads over big tables pass jit_above_cost, and compiling cost more than running them."""

from django.db import connection


def test_the_applications_sessions_do_not_compile_plans_to_machine_code(db):
    with connection.cursor() as cur:
        cur.execute("SHOW jit")
        assert cur.fetchone()[0] == "off"
