"""A regexp sw_platform resolves to one of the queue's cmtconfigs (seed: "The regexp in
sw_platform is resolved to a relevant string in the cmtconfigs list of the queue")."""

from types import SimpleNamespace

from brokerage import architecture

SOFTWARE = {
    "cmtconfigs": ["x86_64-el9-gcc13-opt"],
    "containers": [],
    "cvmfs": ["atlas"],
    "tags": [{"cmtconfig": "x86_64-el9-gcc13-opt", "project": "Athena", "release": "24.0.30"}],
}


def test_a_regexp_platform_resolves_to_the_queues_cmtconfig():
    assert (
        architecture.resolve_platform("x86_64-(centos7|el9)-gcc.*-opt", SOFTWARE["cmtconfigs"])
        == "x86_64-el9-gcc13-opt"
    )
    assert architecture.resolve_platform("x86_64-el9-gcc13-opt", []) == "x86_64-el9-gcc13-opt"


def test_a_task_with_a_regexp_platform_passes_the_release_check_where_it_resolves():
    task = SimpleNamespace(release="Athena-24.0.30", container_name="", only_tags_for_fc=False)
    spec = architecture.parse("x86_64-(centos7|el9)-gcc.*-opt")
    assert architecture.check_release(task, spec, SOFTWARE) is None
    other = {**SOFTWARE, "cmtconfigs": ["aarch64-el9-gcc13-opt"], "tags": []}
    assert architecture.check_release(task, spec, other) is not None


def test_a_regexp_platform_that_also_matches_its_own_text_resolves_to_the_queues_cmtconfig():
    # `gcc.*` matches the two characters ".*" too, so the pattern matches its own text; it is
    # still a regexp and resolves like any other.
    assert (
        architecture.resolve_platform("x86_64-el9-gcc.*-opt", SOFTWARE["cmtconfigs"])
        == "x86_64-el9-gcc13-opt"
    )
    task = SimpleNamespace(release="Athena-24.0.30", container_name="", only_tags_for_fc=False)
    spec = architecture.parse("x86_64-el9-gcc.*-opt")
    assert architecture.check_release(task, spec, SOFTWARE) is None


def test_a_platform_no_cmtconfig_matches_stays_as_written():
    assert (
        architecture.resolve_platform("aarch64-el9-gcc.*-opt", SOFTWARE["cmtconfigs"])
        == "aarch64-el9-gcc.*-opt"
    )
    assert architecture.resolve_platform("x86_64-el9-gcc(13", ["x86_64-el9-gcc13"]) == (
        "x86_64-el9-gcc(13"
    )
