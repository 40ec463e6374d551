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
