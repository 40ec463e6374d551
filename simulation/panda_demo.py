"""The demo's PanDA topology: two nuclei (CERN, RAL), a queue per demo site, storages, links,
datasets with replicas, software tags and worker-node GPUs, and a few production tasks."""

from __future__ import annotations

from core import clock
from simulation.demo import LOCAL_CE, LOCAL_SITE, SITES

NUCLEI = {"CERN-PROD": "LCG.CERN.ch", "RAL-LCG2": "LCG.RAL.uk"}
QUEUE_OF_SITE = {
    "LCG.CERN.ch": "CERN-PROD_MCORE",
    "LCG.PIC.es": "PIC_MCORE",
    "LCG.RAL.uk": "RAL-LCG2_SCORE",
    "LCG.IN2P3.fr": "IN2P3-CC_SCORE",
    "LCG.CNAF.it": "INFN-T1_GPU",
    "LCG.GRIDKA.de": "FZK-LCG2_MCORE",
}
NUCLEUS_OF_SITE = {site: name for name, site in NUCLEI.items()}
ANALYSIS_QUEUES = [
    ("LCG.CERN.ch", "ANALY_CERN", "hi"),
    ("LCG.PIC.es", "ANALY_PIC", "mid"),
    ("LCG.GRIDKA.de", "ANALY_FZK", "lo"),
]
GLOBAL_SHARES = [("MC Simulation", 50.0), ("User Analysis", 20.0), ("Express Analysis", 5.0)]

SOFTWARE = {
    "cmtconfigs": ["x86_64-el9-gcc13-opt", "x86_64-centos7-gcc11-opt"],
    "containers": ["any", "/cvmfs"],
    "cvmfs": ["atlas", "nightlies"],
    "architectures": [
        {"arch": ["x86_64"], "instr": ["avx2"], "type": "cpu", "vendor": ["intel", "amd"]}
    ],
    "tags": [
        {
            "cmtconfig": "x86_64-el9-gcc13-opt",
            "container_name": "",
            "project": "Athena",
            "release": "24.0.30",
            "sources": [],
            "tag": "VO-atlas-Athena-24.0.30-x86_64-el9-gcc13-opt",
        }
    ],
}
GPU_SOFTWARE = {
    **SOFTWARE,
    "architectures": [
        *SOFTWARE["architectures"],
        {"type": "gpu", "vendor": ["nvidia"], "model": ["A100"]},
    ],
}
GPU_ROWS = [
    {
        "vendor": "NVIDIA",
        "model": "NVIDIA A100-SXM4-80GB",
        "vram": 81920,
        "architecture": "Ampere",
        "framework_version": "12.4",
        "driver_version": "575.57.08",
        "gpus_per_host": 4,
    }
]


def topology() -> dict:
    """The demo topology as the JSON `manage.py import_topology` reads."""
    storages, queues, links = [], [], []
    for site in SITES:
        storages.append(_storage(site))
        queues.append(_production_queue(site))
        links.extend(_links_from(site))
    for site, name, site_class in ANALYSIS_QUEUES:
        queues.append(_analysis_queue(site, name, site_class))
    software = {QUEUE_OF_SITE[s]: SOFTWARE for s in SITES}
    software["INFN-T1_GPU"] = GPU_SOFTWARE
    software["ALL"] = {"tags": []}
    return {
        "nuclei": [{"name": n, "site": s} for n, s in NUCLEI.items()],
        "storages": storages,
        "queues": queues,
        "links": links,
        "datasets": _datasets(),
        "software": software,
        "gpus": {"INFN-T1_GPU": GPU_ROWS},
    }


# The local worker node's PanDA queue (simulation.demo.local_worker_node): where a task that runs
# real work is brokered (its CE offers the payload tag). Brokeroff: the brokerage sends it only
# the tasks that name it (a payload task names the real pilots' queues), never the simulated
# tasks, which no real pilot takes. Its pilots start once jobs wait there (no_pilot lets it be).
LOCAL_QUEUE = "LOCAL_REAL_PILOTS"
LOCAL_DISK = "LOCAL_DATADISK"


def local_topology() -> dict:
    """The local worker node's queue and its output storage (the storage check), as
    `import_topology` reads; its CE must exist (`manage.py demo --local-url`)."""
    return {
        "storages": [
            {"name": LOCAL_DISK, "site": LOCAL_SITE, "space_free": 1000.0, "space_total": 1000.0}
        ],
        "queues": [
            {
                "name": LOCAL_QUEUE,
                "site": LOCAL_SITE,
                "computing_element": LOCAL_CE,
                "queue_type": "unified",
                "status": "brokeroff",
                "output_storage": LOCAL_DISK,
            }
        ],
    }


def _disk(site: str) -> str:
    return f"{QUEUE_OF_SITE[site].split('_')[0]}_DATADISK"


def _storage(site: str) -> dict:
    nucleus = NUCLEUS_OF_SITE.get(site)
    return {
        "name": _disk(site),
        "site": site,
        "nucleus": nucleus,
        "space_free": 900_000.0 if nucleus else 400_000.0,
        "space_expired": 50_000.0,
        "space_total": 2_000_000.0,
    }


def _production_queue(site: str) -> dict:
    queue = QUEUE_OF_SITE[site]
    multicore = queue.endswith("MCORE")
    return {
        "name": queue,
        "site": site,
        "nucleus": NUCLEUS_OF_SITE.get(site),
        "computing_element": SITES[site][0][0],
        "core_count": 8 if multicore else 1,
        "minrss": 0,
        "maxrss": 4000,
        "maxwdir": 160_000 if multicore else 20_000,
        "maxtime": 3 * 86400,
        "corepower": 12.0,
        "cpu_efficiency": 85.0,
        "pledgedcpu": 2000,
        "releases": ["AUTO"],
        "wnconnectivity": "full#IPv4",
        "input_storage": _disk(site),
        "output_storage": _disk(site),
        "fairsharepolicy": "type=evgen:100%,type=simul:100%,type=any:0%"
        if site == "LCG.IN2P3.fr"
        else "",
        "last_pilot": clock.now().isoformat(),
    }


def _links_from(site: str) -> list[dict]:
    """A link from the site to every nucleus but its own."""
    return [
        {
            "source": site,
            "nucleus": nucleus_name,
            "queued_files": 20,
            "mbps_1d": 120.0 if "CERN" in nucleus_name else 40.0,
            "closeness": 2,
        }
        for nucleus_name, nucleus_site in NUCLEI.items()
        if site != nucleus_site
    ]


def _analysis_queue(site: str, name: str, site_class: str) -> dict:
    return {
        "name": name,
        "site": site,
        "queue_type": "analysis",
        "site_class": site_class,
        "core_count": 1,
        "maxrss": 4000,
        "maxtime": 2 * 86400,
        "corepower": 11.0,
        "releases": ["ANY"],
        "wnconnectivity": "full#IPv4",
        "input_storage": _disk(site),
        "output_storage": _disk(site),
        "last_pilot": clock.now().isoformat(),
    }


def _datasets() -> list[dict]:
    return [
        {
            "name": "mc23_13p6TeV.601229.PhPy8EG_ttbar.evgen.EVNT.e8514",
            "n_files": 400,
            "size_gb": 800.0,
            "replicas": [
                {"storage": "CERN-PROD_DATADISK", "files": 400, "size_gb": 800.0, "complete": True},
                {"storage": "PIC_DATADISK", "files": 120, "size_gb": 240.0},
            ],
        },
        {
            # A part of it, as a task of a few jobs reads: a job's share of the whole dataset
            # (100 GB for 8 jobs) is more than any production queue's work directory takes, so
            # such a task was never brokered (every queue skipped by the disk check).
            "name": SMALL_DATASET,
            "n_files": 16,
            "size_gb": 32.0,
            "replicas": [
                {"storage": "CERN-PROD_DATADISK", "files": 16, "size_gb": 32.0, "complete": True},
                {"storage": "RAL-LCG2_DATADISK", "files": 16, "size_gb": 32.0, "complete": True},
            ],
        },
    ]


SMALL_DATASET = "mc23_13p6TeV.601229.PhPy8EG_ttbar.evgen.EVNT.e8514_tid38712345_00"
# The most input a production job of the demo reads (GB): the production queues' work
# directories take 20 GB per core, with the job's output and work space.
MAX_INPUT_GB_PER_JOB = 8.0

# The demo's first production tasks and their owner: a few jobs of minutes each, in lhcb_data,
# whose share carries the demo's production (simulation.services.PRODUCTION_SUBMITTERS); in
# lhcb_mc (0.6 % of the grid, site-restricted jobs got less) they waited all day.
DEMO_TASKS_OWNER = ("dave", "lhcb_data")
DEMO_TASKS = [
    {
        "name": "mc23.ttbar.simul",
        "processing_type": "simul",
        "priority": 600,
        "core_count": 8,
        "ram_count": 2000,
        "cpu_time": 30.0,
        "n_jobs": 8,
        "n_events_per_job": 100,
        "release": "Athena-24.0.30",
        "architecture": "x86_64-el9-gcc13-opt",
        "inputs": [SMALL_DATASET],
    },
    {
        "name": "mc23.jets.evgen",
        "processing_type": "evgen",
        "priority": 500,
        "core_count": 1,
        "ram_count": 1500,
        "cpu_time": 5.0,
        "n_jobs": 6,
        "n_events_per_job": 500,
    },
    {
        "name": "gpu.training",
        "processing_type": "reprocessing",
        "priority": 700,
        "core_count": 1,
        "ram_count": 3000,
        "cpu_time": 1.0,
        "n_jobs": 3,
        "n_events_per_job": 1000,
        "architecture": "#&nvidia:model=.*A100.*:vram>=40960:cuda>=12.0:driver>=575.0",
    },
]

DEMO_ANALYSIS_TASKS = [
    {
        "kind": "analysis",
        "name": "user.alice.higgs.ntuple",
        "gshare": "User Analysis",
        "processing_type": "panda-client",
        "priority": 1000,
        "task_class": "A",
        "ram_count": 2000,
        "cpu_time": 10.0,
        "n_jobs": 4,
        "n_events_per_job": 200,
        "inputs": ["mc23_13p6TeV.601229.PhPy8EG_ttbar.evgen.EVNT.e8514"],
    }
]
