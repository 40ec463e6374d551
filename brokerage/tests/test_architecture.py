"""The task `architecture` parser and the CPU/GPU/container/release checks.

brokerage/architecture.py against PanDA's brokerage description (the checks for CPU and GPU
hardware, for fat containers and for releases, caches or nightlies, the AGLT2 queue JSON) and the
project's choices where PanDA's code differs (`!=` on vram/cuda/driver works; a queue list `[""]`
accepts any value): docs/developer-guide.md, PanDA brokerage. Pure functions, no database.
"""

from types import SimpleNamespace

import pytest

from brokerage.architecture import (
    ArchitectureError,
    check_container,
    check_cpu,
    check_gpu,
    check_release,
    check_software,
    compare_version,
    parse,
    parse_release,
)

EMPTY = {"sw_platform": "", "base_platform": "", "cpu_specs": [], "gpu_spec": None}


def gpu_only(**gpu):
    return {**EMPTY, "gpu_spec": gpu}


def cpu_only(*cpus):
    return {**EMPTY, "cpu_specs": list(cpus)}


def task(container_name="", only_tags_for_fc=False, release=""):
    return SimpleNamespace(
        container_name=container_name, only_tags_for_fc=only_tags_for_fc, release=release
    )


# --- queue fixtures ----------------------------------------------------------------------------

# The seed's AGLT2 example (its GPU entry reduced to lists, as the seed says every attribute is).
AGLT2 = {
    "cmtconfigs": [
        "x86_64-centos7-gcc62-opt",
        "x86_64-centos7-gcc8-opt",
        "x86_64-slc6-gcc49-opt",
        "x86_64-slc6-gcc62-opt",
        "x86_64-slc6-gcc8-opt",
    ],
    "containers": ["any", "/cvmfs"],
    "cvmfs": ["atlas", "nightlies"],
    "architectures": [
        {"arch": ["x86_64"], "instr": ["avx2"], "type": "cpu", "vendor": ["intel", "excl"]},
        {"type": "gpu", "vendor": ["nvidia", "excl"], "model": ["kt100"], "version": ["11.0.3"]},
    ],
    "tags": [
        {
            "cmtconfig": "x86_64-slc6-gcc62-opt",
            "container_name": "",
            "project": "AthDerivation",
            "release": "21.2.2.0",
            "sources": [],
            "tag": "VO-atlas-AthDerivation-21.2.2.0-x86_64-slc6-gcc62-opt",
        },
        {
            "cmtconfig": "x86_64-slc6-gcc62-opt",
            "container_name": "",
            "project": "Athena",
            "release": "21.0.38",
            "sources": [],
            "tag": "VO-atlas-Athena-21.0.38-x86_64-slc6-gcc62-opt",
        },
    ],
}


def cpu_queue(**attrs):
    return {"architectures": [{"type": "cpu", **attrs}]}


GPU_CRIC = {"type": "gpu", "vendor": ["nvidia"]}
GPU_QUEUE = {"architectures": [{"type": "cpu", "arch": ["x86_64"]}, GPU_CRIC]}

A100 = {
    "vendor": "NVIDIA",
    "model": "NVIDIA A100-SXM4-80GB",
    "vram": 81920,
    "architecture": "Ampere",
    "framework_version": "12.4",
    "driver_version": "575.57.08",
    "gpus_per_host": 4,
}
V100 = {
    "vendor": "NVIDIA",
    "model": "Tesla V100S-PCIE-32GB",
    "vram": 32768,
    "architecture": "Volta",
    "framework_version": "11.8",
    "driver_version": "535.104.05",
    "gpus_per_host": 2,
}
P100 = {
    "vendor": "NVIDIA",
    "model": "Tesla P100-PCIE-16GB",
    "vram": 16384,
    "architecture": "Pascal",
    "framework_version": "11.8",
    "driver_version": "535.104.05",
    "gpus_per_host": 2,
}
T4 = {
    "vendor": "NVIDIA",
    "model": "Tesla T4",
    "vram": 15360,
    "architecture": "Turing",
    "framework_version": "12.2",
    "driver_version": "550.54.15",
    "gpus_per_host": 1,
}


# --- parser: the seed's prun / pathena shorthand examples ----------------------------------------

SHORTHAND = [
    # any NVIDIA GPU
    ("#&nvidia", {"vendor": "nvidia"}),
    # NVIDIA GPU with at least 40 GB VRAM
    ("#&nvidia:vram>=40960", {"vendor": "nvidia", "vram": ">=40960"}),
    # NVIDIA GPU with exactly 15 GB VRAM
    ("#&nvidia:vram==15360", {"vendor": "nvidia", "vram": "==15360"}),
    # NVIDIA GPU on Ampere microarchitecture with CUDA >= 12.0
    (
        "#&nvidia:uarch=Ampere:cuda>=12.0",
        {"vendor": "nvidia", "microarchitecture": "Ampere", "version": ">=12.0"},
    ),
    # NVIDIA A100 with at least 40 GB VRAM and kernel driver >= 575.0
    (
        "#&nvidia:model=.*A100.*:vram>=40960:driver>=575.0",
        {
            "vendor": "nvidia",
            "model": ".*A100.*",
            "vram": ">=40960",
            "driver_version": ">=575.0",
        },
    ),
    # any NVIDIA GPU excluding P100
    (
        "#&nvidia:model!=.*P100.*",
        {"vendor": "nvidia", "model": {"pattern": ".*P100.*", "excl": True}},
    ),
    # any NVIDIA GPU excluding P100 or V100
    (
        "#&nvidia:model!=.*(P100|V100).*",
        {"vendor": "nvidia", "model": {"pattern": ".*(P100|V100).*", "excl": True}},
    ),
    # ART header: NVIDIA A100 with at least 40 GB VRAM
    (
        "#&nvidia:model=.*A100.*:vram>=40960",
        {"vendor": "nvidia", "model": ".*A100.*", "vram": ">=40960"},
    ),
    # ART header: CUDA >= 12.0 on Ampere (keys in the other order)
    (
        "#&nvidia:cuda>=12.0:uarch=Ampere",
        {"vendor": "nvidia", "version": ">=12.0", "microarchitecture": "Ampere"},
    ),
    # ART header: A100, exactly 80 GB VRAM, CUDA >= 12.0, kernel driver >= 575.0
    (
        "#&nvidia:model=.*A100.*:vram==81920:cuda>=12.0:driver>=575.0",
        {
            "vendor": "nvidia",
            "model": ".*A100.*",
            "vram": "==81920",
            "version": ">=12.0",
            "driver_version": ">=575.0",
        },
    ),
    # the brief's full shorthand
    (
        "#&nvidia:model=.*A100.*:vram>=40960:cuda>=12.0:driver>=575.0",
        {
            "vendor": "nvidia",
            "model": ".*A100.*",
            "vram": ">=40960",
            "version": ">=12.0",
            "driver_version": ">=575.0",
        },
    ),
]


@pytest.mark.parametrize(("text", "gpu"), SHORTHAND, ids=[t for t, _ in SHORTHAND])
def test_every_shorthand_example_of_the_seed_parses_to_the_exact_gpu_spec(text, gpu):
    assert parse(text) == {**EMPTY, "gpu_spec": gpu}


def test_shorthand_model_exclusion_becomes_pattern_with_excl():
    spec = parse("#&nvidia:model!=.*P100.*")
    assert spec["gpu_spec"]["model"] == {"pattern": ".*P100.*", "excl": True}


def test_shorthand_single_equals_is_read_as_double_equals():
    assert parse("#&nvidia:vram=15360")["gpu_spec"]["vram"] == "==15360"
    assert parse("#&nvidia:cuda=12.4")["gpu_spec"]["version"] == "==12.4"


@pytest.mark.parametrize("op", ["==", ">=", "<=", ">", "<", "!="])
def test_shorthand_accepts_every_operator_on_vram(op):
    assert parse(f"#&nvidia:vram{op}40960")["gpu_spec"]["vram"] == f"{op}40960"


def test_shorthand_not_equal_on_cuda_and_driver_is_kept_as_written():
    gpu = parse("#&nvidia:cuda!=11.8:driver!=535.104.05")["gpu_spec"]
    assert gpu == {"vendor": "nvidia", "version": "!=11.8", "driver_version": "!=535.104.05"}


def test_shorthand_vendor_dash_model_gives_the_model():
    assert parse("&nvidia-A100")["gpu_spec"] == {"vendor": "nvidia", "model": "A100"}


def test_shorthand_tolerates_spaces_around_parts():
    assert parse("#&nvidia: vram >= 40960 ")["gpu_spec"] == {"vendor": "nvidia", "vram": ">=40960"}


# --- parser: the seed's JSON examples ----------------------------------------------------------

JSON_EXAMPLES = [
    # any NVIDIA GPU with at least 40 GB VRAM and CUDA >= 12.0 (prun and ART header)
    (
        '{"gpu_spec": {"vendor": "nvidia", "vram": ">=40960", "version": ">=12.0"}}',
        {"vendor": "nvidia", "vram": ">=40960", "version": ">=12.0"},
    ),
    # NVIDIA A100, Ampere microarchitecture, kernel driver >= 575.0
    (
        '{"gpu_spec": {"vendor": "nvidia", "model": ".*A100.*", "microarchitecture": "Ampere", '
        '"driver_version": ">=575.0"}}',
        {
            "vendor": "nvidia",
            "model": ".*A100.*",
            "microarchitecture": "Ampere",
            "driver_version": ">=575.0",
        },
    ),
    # any NVIDIA GPU excluding P100, at least 40 GB VRAM
    (
        '{"gpu_spec": {"vendor": "nvidia", "model": {"pattern": ".*P100.*", "excl": true}, '
        '"vram": ">=40960"}}',
        {"vendor": "nvidia", "model": {"pattern": ".*P100.*", "excl": True}, "vram": ">=40960"},
    ),
    # any NVIDIA GPU excluding P100 and V100 (prun and ART header)
    (
        '{"gpu_spec": {"vendor": "nvidia", "model": {"pattern": ".*(P100|V100).*", "excl": true}}}',
        {"vendor": "nvidia", "model": {"pattern": ".*(P100|V100).*", "excl": True}},
    ),
]


@pytest.mark.parametrize(("text", "gpu"), JSON_EXAMPLES, ids=["vram-cuda", "a100", "no-p100", "pv"])
def test_every_json_example_of_the_seed_parses_to_the_exact_gpu_spec(text, gpu):
    assert parse(text) == {**EMPTY, "gpu_spec": gpu}


def test_json_and_shorthand_spell_the_same_request_identically():
    assert parse("#&nvidia:model!=.*(P100|V100).*") == parse(JSON_EXAMPLES[3][0])
    assert parse("#&nvidia:vram>=40960:cuda>=12.0") == parse(JSON_EXAMPLES[0][0])


def test_json_single_equals_is_read_as_double_equals():
    spec = parse('{"gpu_spec": {"vendor": "nvidia", "vram": "=15360", "version": "=12.4"}}')
    assert spec["gpu_spec"] == {"vendor": "nvidia", "vram": "==15360", "version": "==12.4"}


def test_json_model_with_excl_false_is_a_plain_inclusion_pattern():
    spec = parse('{"gpu_spec": {"vendor": "nvidia", "model": {"pattern": ".*A100.*"}}}')
    assert spec["gpu_spec"]["model"] == ".*A100.*"


def test_json_microarchitecture_list_is_kept_as_a_list():
    text = (
        '{"gpu_spec": {"vendor": "nvidia", '
        '"microarchitecture": ["Ampere", "Hopper", "Ada Lovelace"]}}'
    )
    assert parse(text)["gpu_spec"]["microarchitecture"] == ["Ampere", "Hopper", "Ada Lovelace"]


def test_json_full_form_keeps_platforms_and_fills_missing_cpu_fields_as_any():
    text = (
        '{"sw_platform": "x86_64-el9-gcc13-opt", "base_platform": "el9", '
        '"cpu_specs": [{"arch": "x86_64", "vendor": "intel", "instr": "avx2", "type": "cpu"}, '
        '{"arch": "aarch64"}], "cpu_pref": {"preferred_architecture_level": "x86-64-v3"}}'
    )
    assert parse(text) == {
        "sw_platform": "x86_64-el9-gcc13-opt",
        "base_platform": "el9",
        "cpu_specs": [{"arch": "x86_64", "vendor": "intel", "instr": "avx2"}, {"arch": "aarch64"}],
        "gpu_spec": None,
    }


def test_json_cpu_spec_without_arch_keeps_only_its_vendor():
    assert parse('{"cpu_specs": [{"vendor": "intel"}]}')["cpu_specs"] == [{"vendor": "intel"}]


def test_json_regexp_cpu_arch_is_kept_whole():
    spec = parse('{"cpu_specs": [{"arch": "(x86_64|aarch64)"}]}')
    assert spec["cpu_specs"] == [{"arch": "(x86_64|aarch64)"}]


def test_json_wildcard_gpu_asks_for_no_gpu():
    assert parse('{"gpu_spec": {"vendor": "*", "model": "*"}}')["gpu_spec"] is None


# --- parser: the old string format -------------------------------------------------------------


def test_old_format_splits_sw_platform_base_platform_cpu_and_gpu():
    spec = parse("x86_64-centos7-gcc8-opt@centos7#x86_64-intel-avx2&nvidia-A100")
    assert spec == {
        "sw_platform": "x86_64-centos7-gcc8-opt",
        "base_platform": "centos7",
        "cpu_specs": [{"arch": "x86_64", "vendor": "intel", "instr": "avx2"}],
        "gpu_spec": {"vendor": "nvidia", "model": "A100"},
    }


def test_old_format_without_cpu_spec_takes_the_arch_from_sw_platform():
    assert parse("x86_64-slc6-gcc62-opt") == {
        "sw_platform": "x86_64-slc6-gcc62-opt",
        "base_platform": "",
        "cpu_specs": [{"arch": "x86_64"}],
        "gpu_spec": None,
    }


def test_old_format_with_only_a_base_platform_asks_for_no_cpu():
    assert parse("@el9") == {**EMPTY, "base_platform": "el9"}


def test_old_format_base_platform_keeps_its_container_image():
    # "@base_platform_name+base_container_image": given to the pilot, not used by the brokerage.
    spec = parse("x86_64-el9-gcc13-opt@el9+docker://atlas/athena:25.0")
    assert spec["base_platform"] == "el9+docker://atlas/athena:25.0"


def test_old_format_regexp_cpu_alternation_becomes_one_spec_per_architecture():
    spec = parse("x86_64-el9-gcc13-opt#(x86_64|aarch64)")
    assert spec["cpu_specs"] == [{"arch": "x86_64"}, {"arch": "aarch64"}]


def test_old_format_cpu_spec_pads_vendor_and_instruction_set_as_any():
    assert parse("#x86_64")["cpu_specs"] == [{"arch": "x86_64"}]
    assert parse("#x86_64-intel")["cpu_specs"] == [{"arch": "x86_64", "vendor": "intel"}]
    assert parse("#x86_64-*-avx2")["cpu_specs"] == [{"arch": "x86_64", "instr": "avx2"}]


def test_old_format_wildcards_ask_for_no_cpu_and_no_gpu():
    assert parse("#*&*") == EMPTY
    assert parse("#*-*-*") == EMPTY


def test_old_format_cpu_and_shorthand_gpu_together():
    spec = parse("x86_64-el9-gcc13-opt#x86_64&nvidia:vram>=40960")
    assert spec["cpu_specs"] == [{"arch": "x86_64"}]
    assert spec["gpu_spec"] == {"vendor": "nvidia", "vram": ">=40960"}


@pytest.mark.parametrize("text", ["", "   ", None])
def test_empty_architecture_asks_for_nothing(text):
    assert parse(text) == EMPTY


# --- parser: malformed inputs ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"gpu_spec": {"vendor": "nvidia"}', "not valid JSON"),
        ('{"gpu_specs": {"vendor": "nvidia"}}', "unknown keys ['gpu_specs']"),
        ('{"gpu_spec": {"vendor": "nvidia", "pattern": ".*P100.*", "excl": true}}', "unknown keys"),
        ('{"gpu_spec": {"vendor": "nvidia", "vram": "40960"}}', "needs an operator"),
        ('{"gpu_spec": {"vendor": "nvidia", "vram": ">=40GB"}}', "'40GB' is not a version"),
        ('{"gpu_spec": {"vendor": "nvidia", "vram": 40960}}', "expected text"),
        ('{"gpu_spec": {"vendor": "nvidia", "model": "(A100"}}', "not a valid regular expression"),
        ('{"gpu_spec": {"model": {"pattern": "[P100", "excl": true}}}', "gpu_spec.model.pattern"),
        ('{"gpu_spec": {"model": {"excl": true}}}', "{'pattern'"),
        ('{"gpu_spec": {"model": 100}}', "gpu_spec.model must be"),
        ('{"gpu_spec": {"microarchitecture": 8}}', "microarchitecture must be text"),
        ('{"gpu_spec": "nvidia"}', "gpu_spec must be an object"),
        ('{"cpu_specs": {"arch": "x86_64"}}', "cpu_specs must be a list"),
        ('{"cpu_specs": [{"arch": "x86_64", "cores": 8}]}', "cpu_specs[0]"),
        ('{"cpu_specs": [{"arch": "(x86_64"}]}', "cpu_specs[0].arch"),
        ('{"sw_platform": 7}', "sw_platform must be text"),
    ],
)
def test_malformed_json_raises_an_error_naming_the_part(text, words):
    with pytest.raises(ArchitectureError) as err:
        parse(text)
    assert words in str(err.value)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("#&", "vendor is missing after '&'"),
        ("#&:vram>=40960", "vendor is missing after '&'"),
        ("#&nvidia:memory>=40960", "'memory>=40960' is not key<op>value"),
        ("#&nvidia:vram~40960", "'vram~40960' is not key<op>value"),
        ("#&nvidia:vram", "'vram' is not key<op>value"),
        ("#&nvidia:vram>=40GB", "'40GB' is not a version number"),
        ("#&nvidia:vram=>40960", "'>40960' is not a version number"),
        ("#&nvidia:cuda>=twelve", "'twelve' is not a version number"),
        ("#&nvidia:model>=A100", "model takes = or !="),
        ("#&nvidia:uarch!=Ampere", "uarch takes ="),
        ("#&nvidia:model=.*(A100", "not a valid regular expression"),
        ("#&nvidia:model!=[P100", "not a valid regular expression"),
        ("#(x86_64|aarch64", "host_cpu_spec architecture"),
        ("#x86_64-intel-avx2-extra", "more than architecture-vendor-instruction_set"),
    ],
)
def test_malformed_shorthand_raises_an_error_naming_the_part(text, words):
    with pytest.raises(ArchitectureError) as err:
        parse(text)
    assert words in str(err.value)


@pytest.mark.parametrize(
    "text",
    [
        '\'{"gpu_spec": {"vendor": "nvidia", "vram": ">=40960"}}\'',
        "'#&nvidia:vram>=40960'",
        "'#&nvidia'",
        '"#&nvidia"',
    ],
)
def test_quoted_architecture_from_an_art_header_is_refused_instead_of_silently_misread(text):
    # Seed warning: ART passes the header value literally, quotes included.
    with pytest.raises(ArchitectureError, match="wrapped in quotes"):
        parse(text)


def test_architecture_error_is_a_value_error():
    assert issubclass(ArchitectureError, ValueError)


# --- versions ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "constraint", "ok"),
    [
        ("12.4", ">=12.0", True),
        ("11.8", ">=12.0", False),
        ("575.57.08", ">=575.0", True),
        ("535.104.05", ">=575.0", False),
        (81920, "==81920", True),
        (81920, "=81920", True),
        (32768, "==81920", False),
        (32768, "!=81920", True),
        (81920, "!=81920", False),
        (16384, "<32768", True),
        (32768, "<=32768", True),
        (32768, ">32768", False),
        ("12.0", ">=12", True),  # packaging: 12.0 == 12
        (None, ">=12.0", False),
        ("unknown", ">=12.0", False),
        ("12.4", "12.0", False),  # no operator
    ],
)
def test_compare_version_uses_the_operator_including_not_equal(value, constraint, ok):
    assert compare_version(value, constraint) is ok


def test_parse_release_splits_project_and_version_and_spots_nightlies():
    assert parse_release("Athena-21.0.38") == ("Athena", "21.0.38", False)
    assert parse_release("AthDerivation-21.2.2.0") == ("AthDerivation", "21.2.2.0", False)
    assert parse_release("Athena-22.0.X-rel_3") == ("Athena", "22.0.X-rel_3", True)
    assert parse_release("Athena-main--2025-01-31T2101") == (
        "Athena",
        "main--2025-01-31T2101",
        True,
    )


def test_parse_release_refuses_a_release_without_project():
    with pytest.raises(ArchitectureError, match="not Project-version"):
        parse_release("21.0.38")


# --- CPU ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arch", "accepted"),
    [(["x86_64"], True), ([""], True), (["x86_64", "excl"], True), (["arm64"], False)],
)
def test_task_with_x86_64_is_accepted_by_the_seeds_queues_but_not_arm64(arch, accepted):
    problem = check_cpu(parse("#x86_64"), cpu_queue(arch=arch))
    assert (problem is None) is accepted
    if not accepted:
        assert "arm64" in problem


def test_queue_with_any_arch_accepts_every_arch():
    assert check_cpu(parse("#ppc64le"), cpu_queue(arch=["any"])) is None


def test_regexp_cpu_arch_matches_either_queue_architecture():
    spec = parse('{"cpu_specs": [{"arch": "(x86_64|aarch64)"}]}')
    assert check_cpu(spec, cpu_queue(arch=["x86_64"])) is None
    assert check_cpu(spec, cpu_queue(arch=["aarch64"])) is None
    assert check_cpu(spec, cpu_queue(arch=["ppc64le"])) is not None


def test_old_format_regexp_cpu_matches_either_queue_architecture():
    spec = parse("#(x86_64|aarch64)")
    assert check_cpu(spec, cpu_queue(arch=["aarch64"])) is None
    assert check_cpu(spec, cpu_queue(arch=["arm64"])) is not None


def test_regexp_cpu_arch_must_match_the_whole_queue_value():
    spec = parse('{"cpu_specs": [{"arch": "x86"}]}')
    assert check_cpu(spec, cpu_queue(arch=["x86_64"])) is not None
    spec = parse('{"cpu_specs": [{"arch": "x86.*"}]}')
    assert check_cpu(spec, cpu_queue(arch=["x86_64"])) is None


def test_any_of_several_cpu_specs_may_match():
    spec = cpu_only({"arch": "aarch64"}, {"arch": "x86_64", "vendor": "intel"})
    assert check_cpu(spec, cpu_queue(arch=["x86_64"], vendor=["intel"])) is None
    assert check_cpu(spec, cpu_queue(arch=["x86_64"], vendor=["amd"])) is not None


def test_vendor_and_instruction_set_lists_are_matched_exactly():
    spec = parse("#x86_64-intel-avx2")
    assert (
        check_cpu(spec, cpu_queue(arch=["x86_64"], vendor=["amd", "intel"], instr=["avx2"])) is None
    )
    assert check_cpu(spec, cpu_queue(arch=["x86_64"], vendor=["amd"], instr=["avx2"])) is not None
    assert (
        check_cpu(spec, cpu_queue(arch=["x86_64"], vendor=["intel"], instr=["avx512"])) is not None
    )
    assert check_cpu(spec, cpu_queue(arch=["x86_64"], vendor=["Intel"], instr=["avx2"])) is not None


def test_vendor_list_with_any_or_empty_string_accepts_every_vendor():
    spec = parse("#x86_64-amd")
    assert check_cpu(spec, cpu_queue(arch=["x86_64"], vendor=["any"])) is None
    assert check_cpu(spec, cpu_queue(arch=["x86_64"], vendor=[""])) is None


def test_queue_attribute_without_excl_accepts_tasks_that_do_not_name_it():
    # 'attribute': ['blah'] accepts tasks with attribute='blah' or without the attribute.
    assert check_cpu(parse("#x86_64"), cpu_queue(arch=["x86_64"], vendor=["intel"])) is None


def test_queue_attribute_with_excl_only_accepts_tasks_that_name_it():
    queue = cpu_queue(arch=["x86_64"], vendor=["intel", "excl"])
    assert check_cpu(parse("#x86_64-intel"), queue) is None
    assert check_cpu(parse("#x86_64"), queue) is not None
    assert check_cpu(parse("#x86_64-amd"), queue) is not None


def test_queue_cpu_with_excl_rejects_tasks_without_a_cpu_spec():
    problem = check_cpu(EMPTY, cpu_queue(arch=["x86_64", "excl"]))
    assert "excl" in problem


def test_queue_cpu_without_excl_accepts_tasks_without_a_cpu_spec():
    assert check_cpu(EMPTY, cpu_queue(arch=["x86_64"])) is None
    assert check_cpu(EMPTY, {}) is None


def test_task_asking_for_a_cpu_is_rejected_by_a_queue_publishing_no_architectures():
    assert "no architectures" in check_cpu(parse("#x86_64"), {})
    assert "no architectures" in check_cpu(parse("#x86_64"), {"architectures": []})


def test_task_asking_for_a_cpu_is_rejected_by_a_queue_with_only_a_gpu_entry():
    problem = check_cpu(parse("#x86_64"), {"architectures": [GPU_CRIC]})
    assert "no cpu architecture" in problem


def test_sw_platform_arch_is_checked_when_no_cpu_spec_is_given():
    spec = parse("x86_64-centos7-gcc8-opt")
    assert check_cpu(spec, cpu_queue(arch=["x86_64"])) is None
    assert check_cpu(spec, cpu_queue(arch=["aarch64"])) is not None


def test_aglt2_cpu_accepts_only_tasks_that_name_intel():
    assert check_cpu(parse("#x86_64-intel-avx2"), AGLT2) is None
    assert check_cpu(parse("#x86_64-intel"), AGLT2) is None
    assert check_cpu(parse("#x86_64"), AGLT2) is not None  # vendor list has excl
    assert check_cpu(EMPTY, AGLT2) is not None  # excl: tasks without CPU spec


# --- GPU ---------------------------------------------------------------------------------------


def test_queue_without_a_gpu_entry_is_rejected_whatever_the_worker_nodes_report():
    queue = cpu_queue(arch=["x86_64"])
    problem = check_gpu(parse("#&nvidia"), queue, [A100])
    assert "not GPU-capable" in problem


def test_gpu_capable_queue_without_worker_node_rows_accepts_any_nvidia():
    assert check_gpu(parse("#&nvidia"), GPU_QUEUE, []) is None


def test_gpu_capable_queue_without_worker_node_rows_rejects_specific_attributes():
    problem = check_gpu(parse("#&nvidia:vram>=40960"), GPU_QUEUE, [])
    assert "no worker-node GPU data" in problem and "vram" in problem
    assert check_gpu(parse("#&nvidia:model!=.*P100.*"), GPU_QUEUE, []) is not None
    assert check_gpu(parse("#&nvidia:uarch=Ampere"), GPU_QUEUE, []) is not None


def test_gpu_capable_queue_without_rows_checks_the_vendor_against_cric():
    amd = {"architectures": [{"type": "gpu", "vendor": ["amd"]}]}
    assert "not in" in check_gpu(parse("#&nvidia"), amd, [])
    anyone = {"architectures": [{"type": "gpu", "vendor": ["any"]}]}
    assert check_gpu(parse("#&nvidia"), anyone, []) is None
    no_vendor = {"architectures": [{"type": "gpu"}]}
    assert check_gpu(parse("#&nvidia"), no_vendor, []) is None


def test_gpu_queue_with_excl_rejects_tasks_without_a_gpu_spec():
    queue = {"architectures": [{"type": "gpu", "vendor": ["nvidia", "excl"]}]}
    assert "excl" in check_gpu(EMPTY, queue, [A100])
    assert check_gpu(parse("#&nvidia"), queue, [A100]) is None


def test_gpu_queue_without_excl_accepts_cpu_only_tasks():
    assert check_gpu(EMPTY, GPU_QUEUE, [A100]) is None


def test_vendor_is_a_case_insensitive_regexp_against_the_worker_node_rows():
    assert check_gpu(parse("#&NVIDIA"), GPU_QUEUE, [A100]) is None
    assert check_gpu(parse("#&nv.*"), GPU_QUEUE, [A100]) is None
    assert "no amd GPU" in check_gpu(parse("#&amd"), GPU_QUEUE, [A100])


# The seed's examples against three queues' worker-node GPUs.
A100_QUEUE = [A100]
V100_QUEUE = [V100]
P100_QUEUE = [P100]

SEED_GPU_EXAMPLES = [
    # (architecture, accepted by A100 queue, by V100 queue, by P100 queue)
    ("#&nvidia", True, True, True),
    ("#&nvidia:vram>=40960", True, False, False),
    ("#&nvidia:vram==15360", False, False, False),
    ("#&nvidia:uarch=Ampere:cuda>=12.0", True, False, False),
    ("#&nvidia:model=.*A100.*:vram>=40960:driver>=575.0", True, False, False),
    ("#&nvidia:model!=.*P100.*", True, True, False),
    ("#&nvidia:model!=.*(P100|V100).*", True, False, False),
    ("#&nvidia:model=.*A100.*:vram>=40960", True, False, False),
    ("#&nvidia:cuda>=12.0:uarch=Ampere", True, False, False),
    ("#&nvidia:model=.*A100.*:vram==81920:cuda>=12.0:driver>=575.0", True, False, False),
    ("#&nvidia:model=.*A100.*:vram>=40960:cuda>=12.0:driver>=575.0", True, False, False),
    (
        '{"gpu_spec": {"vendor": "nvidia", "vram": ">=40960", "version": ">=12.0"}}',
        True,
        False,
        False,
    ),
    (JSON_EXAMPLES[1][0], True, False, False),
    (JSON_EXAMPLES[2][0], True, False, False),
    (JSON_EXAMPLES[3][0], True, False, False),
]


@pytest.mark.parametrize(
    ("text", "a100", "v100", "p100"), SEED_GPU_EXAMPLES, ids=[e[0] for e in SEED_GPU_EXAMPLES]
)
def test_seed_gpu_examples_against_a100_v100_and_p100_queues(text, a100, v100, p100):
    spec = parse(text)
    for rows, accepted in ((A100_QUEUE, a100), (V100_QUEUE, v100), (P100_QUEUE, p100)):
        problem = check_gpu(spec, GPU_QUEUE, rows)
        assert (problem is None) is accepted, (rows[0]["model"], problem)


def test_exactly_15_gb_vram_is_accepted_by_a_t4_queue():
    assert check_gpu(parse("#&nvidia:vram==15360"), GPU_QUEUE, [T4]) is None
    assert check_gpu(parse("#&nvidia:vram=15360"), GPU_QUEUE, [T4]) is None


def test_vram_not_equal_works_unlike_pandas_code():
    # `!=` on vram/cuda/driver works (docs/developer-guide.md, PanDA brokerage).
    assert check_gpu(parse("#&nvidia:vram!=16384"), GPU_QUEUE, [A100]) is None
    assert check_gpu(parse("#&nvidia:vram!=16384"), GPU_QUEUE, [P100]) is not None


def test_cuda_and_driver_not_equal_work():
    assert check_gpu(parse("#&nvidia:cuda!=11.8"), GPU_QUEUE, [A100]) is None
    assert check_gpu(parse("#&nvidia:cuda!=11.8"), GPU_QUEUE, [V100]) is not None
    assert check_gpu(parse("#&nvidia:driver!=535.104.05"), GPU_QUEUE, [A100]) is None
    assert check_gpu(parse("#&nvidia:driver!=535.104.05"), GPU_QUEUE, [V100]) is not None


def test_vram_at_the_boundary_of_greater_or_equal_is_accepted():
    exact_40gb = {**A100, "vram": 40960}
    assert check_gpu(parse("#&nvidia:vram>=40960"), GPU_QUEUE, [exact_40gb]) is None
    assert check_gpu(parse("#&nvidia:vram>40960"), GPU_QUEUE, [exact_40gb]) is not None


def test_driver_version_compares_as_a_version_not_as_text():
    # "1000.1" < "575.0" as text, but 1000.1 > 575.0 as a version.
    assert (
        check_gpu(
            parse("#&nvidia:driver>=575.0"), GPU_QUEUE, [{**A100, "driver_version": "1000.1"}]
        )
        is None
    )
    assert (
        check_gpu(
            parse("#&nvidia:driver>=575.0"), GPU_QUEUE, [{**A100, "driver_version": "575.57.08"}]
        )
        is None
    )
    assert (
        check_gpu(
            parse("#&nvidia:driver>=575.0"), GPU_QUEUE, [{**A100, "driver_version": "570.86.1"}]
        )
        is not None
    )


def test_model_inclusion_is_case_insensitive():
    assert check_gpu(parse("#&nvidia:model=.*a100.*"), GPU_QUEUE, [A100]) is None
    assert check_gpu(parse("#&nvidia:model=.*A100.*"), GPU_QUEUE, [A100]) is None


def test_model_exclusion_is_case_insensitive():
    assert check_gpu(parse("#&nvidia:model!=.*p100.*"), GPU_QUEUE, [P100]) is not None


def test_model_regexp_is_matched_from_the_start_of_the_model_name():
    # re.match semantics: "A100" alone does not match "NVIDIA A100-SXM4-80GB".
    assert check_gpu(parse("#&nvidia:model=A100"), GPU_QUEUE, [A100]) is not None
    assert check_gpu(parse("#&nvidia:model=nvidia a100"), GPU_QUEUE, [A100]) is None


def test_model_inclusion_needs_one_row_and_exclusion_needs_none():
    mixed = [A100, P100]
    assert check_gpu(parse("#&nvidia:model=.*A100.*"), GPU_QUEUE, mixed) is None
    problem = check_gpu(parse("#&nvidia:model!=.*P100.*"), GPU_QUEUE, mixed)
    assert "excludes" in problem
    assert "needs" in check_gpu(parse("#&nvidia:model=.*H100.*"), GPU_QUEUE, mixed)


def test_vram_cuda_and_driver_must_hold_for_every_worker_node_row():
    mixed = [A100, V100]
    problem = check_gpu(parse("#&nvidia:vram>=40960"), GPU_QUEUE, mixed)
    assert "32768" in problem
    assert check_gpu(parse("#&nvidia:cuda>=12.0"), GPU_QUEUE, mixed) is not None
    assert check_gpu(parse("#&nvidia:driver>=575.0"), GPU_QUEUE, mixed) is not None
    assert check_gpu(parse("#&nvidia:vram>=16384"), GPU_QUEUE, mixed) is None


def test_row_without_a_version_fails_a_version_constraint():
    assert (
        check_gpu(parse("#&nvidia:cuda>=12.0"), GPU_QUEUE, [{**A100, "framework_version": None}])
        is not None
    )


def test_microarchitecture_needs_one_row_in_the_list():
    assert check_gpu(parse("#&nvidia:uarch=Ampere"), GPU_QUEUE, [V100, A100]) is None
    assert "Volta" in check_gpu(parse("#&nvidia:uarch=Ampere"), GPU_QUEUE, [V100])
    spec = parse('{"gpu_spec": {"vendor": "nvidia", "microarchitecture": ["Hopper", "Ampere"]}}')
    assert check_gpu(spec, GPU_QUEUE, [A100]) is None
    assert check_gpu(spec, GPU_QUEUE, [T4]) is not None


def test_microarchitecture_is_compared_exactly():
    assert check_gpu(parse("#&nvidia:uarch=ampere"), GPU_QUEUE, [A100]) is not None


def test_cric_gpu_attributes_do_not_decide_when_worker_nodes_report():
    # AGLT2's CRIC says model kt100 and version 11.0.3; the worker nodes' rows decide.
    spec = parse("#&nvidia:model=.*A100.*:cuda>=12.0")
    assert check_gpu(spec, AGLT2, [A100]) is None


# --- containers --------------------------------------------------------------------------------

IMAGE = "docker://atlas/athena:25.0.10"
CVMFS_IMAGE = "/cvmfs/unpacked.cern.ch/registry.hub.docker.com/atlas/athena:25.0.10"
ALL_TAGS = [
    {
        "cmtconfig": "x86_64-el9-gcc13-opt",
        "container_name": "atlas/athena:25.0.10",
        "project": "Athena",
        "release": "25.0.10",
        "sources": [CVMFS_IMAGE],
        "tag": "VO-atlas-Athena-25.0.10",
    }
]


@pytest.mark.parametrize("containers", [["any"], ["/cvmfs"], ["any", "/cvmfs"]])
def test_container_is_accepted_by_queues_with_any_or_cvmfs(containers):
    assert check_container(task(IMAGE), {"containers": containers}, []) is None


def test_container_is_forward_matched_with_the_queue_containers():
    assert check_container(task(IMAGE), {"containers": ["docker://atlas/"]}, []) is None
    assert check_container(task(IMAGE), {"containers": ["docker://cms/"]}, []) is not None
    assert check_container(task(IMAGE), {"containers": ["atlas/"]}, []) is not None


def test_empty_queue_container_entry_does_not_match_everything():
    assert check_container(task(IMAGE), {"containers": [""]}, []) is not None


def test_container_is_resolved_through_the_all_queue_sources():
    queue = {"containers": ["/cvmfs/unpacked.cern.ch/"]}
    assert check_container(task("atlas/athena:25.0.10"), queue, ALL_TAGS) is None
    assert check_container(task("atlas/athena:25.0.10"), queue, []) is not None
    assert check_container(task("atlas/athena:24.0.1"), queue, ALL_TAGS) is not None
    elsewhere = {"containers": ["/srv/images/"]}
    assert check_container(task("atlas/athena:25.0.10"), elsewhere, ALL_TAGS) is not None


def test_queue_without_containers_rejects_container_tasks():
    problem = check_container(task(IMAGE), {}, ALL_TAGS)
    assert IMAGE in problem


def test_only_tags_for_fc_accepts_a_tag_with_the_same_container_name():
    queue = {"containers": [], "tags": ALL_TAGS}
    assert check_container(task("atlas/athena:25.0.10", True), queue, []) is None


def test_only_tags_for_fc_accepts_a_container_listed_in_a_tags_sources():
    queue = {"containers": [], "tags": ALL_TAGS}
    assert check_container(task(CVMFS_IMAGE, True), queue, []) is None


def test_only_tags_for_fc_ignores_any_cvmfs_and_forward_matches():
    queue = {"containers": ["any", "/cvmfs", "docker://"], "tags": []}
    problem = check_container(task(IMAGE, True), queue, ALL_TAGS)
    assert "onlyTagsForFC" in problem
    assert check_container(task(IMAGE, False), queue, ALL_TAGS) is None


def test_only_tags_for_fc_does_not_match_a_prefix_of_a_source():
    queue = {"tags": ALL_TAGS}
    assert check_container(task("/cvmfs/unpacked.cern.ch/", True), queue, []) is not None


# --- releases, caches, nightlies ---------------------------------------------------------------

REL = "Athena-21.0.38"
NIGHTLY = "Athena-22.0.X-rel_3"


def release_queue(**kw):
    return {"cmtconfigs": [], "containers": [], "cvmfs": [], "tags": [], **kw}


@pytest.mark.parametrize("containers", [["any"], ["/cvmfs"]])
def test_release_on_cvmfs_atlas_with_any_or_cvmfs_container_is_accepted(containers):
    queue = release_queue(cvmfs=["atlas"], containers=containers)
    assert check_release(task(release=REL), parse("x86_64-el9-gcc13-opt"), queue) is None


def test_release_needs_atlas_not_nightlies_on_cvmfs():
    queue = release_queue(cvmfs=["nightlies"], containers=["/cvmfs"])
    assert check_release(task(release=REL), parse("x86_64-el9-gcc13-opt"), queue) is not None


def test_nightly_needs_nightlies_not_atlas_on_cvmfs():
    spec = parse("x86_64-el9-gcc13-opt")
    assert (
        check_release(
            task(release=NIGHTLY), spec, release_queue(cvmfs=["nightlies"], containers=["any"])
        )
        is None
    )
    problem = check_release(
        task(release=NIGHTLY), spec, release_queue(cvmfs=["atlas"], containers=["any"])
    )
    assert NIGHTLY in problem


def test_cvmfs_any_serves_releases_and_nightlies():
    spec = parse("x86_64-el9-gcc13-opt")
    queue = release_queue(cvmfs=["any"], containers=["/cvmfs"])
    assert check_release(task(release=REL), spec, queue) is None
    assert check_release(task(release=NIGHTLY), spec, queue) is None


def test_release_on_cvmfs_is_accepted_when_sw_platform_is_in_cmtconfigs():
    queue = release_queue(cvmfs=["atlas"], cmtconfigs=AGLT2["cmtconfigs"])
    assert check_release(task(release=REL), parse("x86_64-slc6-gcc8-opt"), queue) is None
    assert check_release(task(release=REL), parse("x86_64-el9-gcc13-opt"), queue) is not None


def test_cvmfs_without_platform_or_container_is_not_enough():
    queue = release_queue(cvmfs=["atlas"])
    assert check_release(task(release=REL), EMPTY, queue) is not None


def test_release_without_cvmfs_is_accepted_by_a_tag_with_same_cmtconfig_project_and_release():
    queue = release_queue(tags=AGLT2["tags"])
    spec = parse("x86_64-slc6-gcc62-opt")
    assert check_release(task(release="Athena-21.0.38"), spec, queue) is None
    assert check_release(task(release="AthDerivation-21.2.2.0"), spec, queue) is None


@pytest.mark.parametrize(
    ("release", "platform"),
    [
        ("Athena-21.0.39", "x86_64-slc6-gcc62-opt"),  # other release
        ("AthDerivation-21.0.38", "x86_64-slc6-gcc62-opt"),  # other project
        ("Athena-21.0.38", "x86_64-centos7-gcc8-opt"),  # other cmtconfig
    ],
)
def test_tag_must_match_cmtconfig_project_and_release_all_three(release, platform):
    queue = release_queue(tags=AGLT2["tags"])
    assert check_release(task(release=release), parse(platform), queue) is not None


def test_base_platform_disables_the_tag_match_unless_containers_has_any():
    spec = parse("x86_64-slc6-gcc62-opt@centos7")
    assert check_release(task(release=REL), spec, release_queue(tags=AGLT2["tags"])) is not None
    queue = release_queue(tags=AGLT2["tags"], containers=["any"])
    assert check_release(task(release=REL), spec, queue) is None


def test_aglt2_serves_a_release_from_cvmfs():
    assert (
        check_release(task(release="Athena-25.0.10"), parse("x86_64-el9-gcc13-opt"), AGLT2) is None
    )


# --- check_software: queue releases ANY, AUTO, or an explicit list -----------------------------


def software(t, spec, releases, sw, rows=(), all_tags=()):
    return check_software(t, spec, releases, sw, list(rows), list(all_tags))


def test_any_queue_accepts_releases_and_containers_without_looking():
    assert software(task(release=REL), EMPTY, ["ANY"], {}) is None
    assert software(task(IMAGE), EMPTY, ["ANY"], {}) is None


def test_any_queue_still_checks_the_hardware():
    assert software(task(release=REL), parse("#&nvidia"), ["ANY"], {}) is not None
    assert software(task(release=REL), parse("#&nvidia"), ["ANY"], GPU_QUEUE, [A100]) is None
    assert (
        software(task(release=REL), parse("#&nvidia:vram>=40960"), ["ANY"], GPU_QUEUE, [V100])
        is not None
    )


def test_auto_queue_checks_containers_for_container_tasks():
    assert software(task(IMAGE), EMPTY, ["AUTO"], {"containers": ["any"]}) is None
    assert software(task(IMAGE), EMPTY, ["AUTO"], {"containers": []}) is not None
    queue = {"containers": ["/cvmfs/unpacked.cern.ch/"]}
    assert software(task("atlas/athena:25.0.10"), EMPTY, ["AUTO"], queue, all_tags=ALL_TAGS) is None


def test_auto_queue_checks_releases_for_release_tasks():
    spec = parse("x86_64-slc6-gcc62-opt")
    assert software(task(release=REL), spec, ["AUTO"], AGLT2) is not None  # AGLT2 cpu excl
    spec = parse("x86_64-slc6-gcc62-opt#x86_64-intel")
    assert "GPUs reserved" in software(task(release=REL), spec, ["AUTO"], AGLT2, [A100])
    spec = parse("x86_64-slc6-gcc62-opt#x86_64-intel&nvidia")
    assert software(task(release=REL), spec, ["AUTO"], AGLT2, [A100]) is None
    # A queue whose hardware fits but which has neither the release on cvmfs nor a tag.
    spec = parse("x86_64-slc6-gcc62-opt")
    queue = {**release_queue(), "architectures": [{"type": "cpu", "arch": ["x86_64"]}]}
    assert "Athena-21.0.38" in software(task(release=REL), spec, ["AUTO"], queue)
    queue["tags"] = AGLT2["tags"]
    assert software(task(release=REL), spec, ["AUTO"], queue) is None


def test_auto_queue_accepts_a_hardware_only_request():
    assert software(task(), parse("#&nvidia"), ["AUTO"], GPU_QUEUE, [A100]) is None
    assert software(task(), EMPTY, ["AUTO"], {}) is None


def test_explicit_release_list_accepts_listed_releases_only():
    assert software(task(release=REL), EMPTY, ["21.0.38", "21.0.40"], {}) is None
    assert software(task(release=REL), EMPTY, ["Athena-21.0.38"], {}) is None
    assert "not in" in software(task(release=REL), EMPTY, ["21.0.40"], {})
    assert software(task(), EMPTY, ["21.0.40"], {}) is None


def test_explicit_release_list_rejects_container_tasks():
    problem = software(task(IMAGE), EMPTY, ["21.0.38"], {"containers": ["any"]})
    assert "neither ANY nor AUTO" in problem


def test_hardware_problem_is_reported_before_software():
    spec = parse("#aarch64")
    problem = software(task(release=REL), spec, ["ANY"], cpu_queue(arch=["x86_64"]))
    assert "aarch64" in problem


# --- an attribute the queue does not publish ---------------------------------------------------
# (docs/developer-guide.md, Absent values and wildcards)


@pytest.mark.parametrize(
    ("architecture", "queue_cpu"),
    [
        ("#x86_64-intel", {"arch": ["x86_64"]}),
        ("#x86_64-intel", {"arch": ["x86_64"], "vendor": []}),
        ("#x86_64-intel-avx2", {"arch": ["x86_64"], "vendor": ["intel"]}),
        ("#x86_64", {"vendor": ["intel"]}),
    ],
)
def test_a_queue_that_publishes_no_list_for_an_attribute_the_task_asks_for_does_not_qualify(
    architecture, queue_cpu
):
    problem = check_cpu(parse(architecture), cpu_queue(**queue_cpu))
    assert problem is not None
    assert "not in" in problem


def test_a_queue_that_publishes_no_vendor_list_still_takes_tasks_that_name_no_vendor():
    assert check_cpu(parse("#x86_64"), cpu_queue(arch=["x86_64"])) is None
    assert check_cpu(parse("#x86_64-*-*"), cpu_queue(arch=["x86_64"])) is None
    assert check_cpu(EMPTY, cpu_queue(arch=["x86_64"])) is None
