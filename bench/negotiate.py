"""Time one negotiation cycle: 100,000 idle job ads in 1,000 autoclusters against 500 site ads.

    .venv/bin/python bench/negotiate.py --scale small
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/negotiate.py --scale full

The world: the demo's users and groups; site ads in the seed's USCMS style with Memory, Arch,
MaxMatches 5-50 (most WantAdRevaluate), advertised through the service; job ads from 1,000
templates (RequestMemory, Arch, half ranking by `-CurMatches/real(MaxMatches)`, half with the
default Rank 0.0, all with `GlobusScheduler = "$$(MatchmakerURL)"`), spread over five users.

Prints one JSON object per line (bench/RESULTS.md, How the benchmarks report):
  negotiation_cycle_s       the whole cycle as run_cycle runs it: read the ads, autoclusters,
                            fair-share order, matchmaking, $$() expansion, writing the matches,
                            the nodes' matcher Jobs into their TaskQueues and the CurMatches
  negotiation_matches_per_s matches written / cycle seconds
In a throw-away database.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import time

from _common import emit, throwaway_database

SCALES = {"small": (10_000, 100, 50), "full": (100_000, 1_000, 500)}
ARCHES = ["X86_64", "aarch64"]
MEMORY = [2048, 4096, 8192, 16384, 32768]


def site_ad(i: int, rng: random.Random) -> str:
    return (
        f'Name = "bench-site-{i:04d}"\n'
        f"UpdateSequenceNumber = {1_700_000_000 + i}\n"
        f"WantAdRevaluate = {'False' if rng.random() < 0.1 else 'True'}\n"
        "CurMatches = 0\n"
        f"MaxMatches = {rng.randint(5, 50)}\n"
        "Rank = 0.0\n"
        "Requirements = (CurMatches < MaxMatches) && (TARGET.WANT_USCMS_MATCHMAKER =?= TRUE)"
        " && (TARGET.RequestMemory <= Memory)\n"
        "Is_USCMS_Site = True\n"
        f'Arch = "{rng.choice(ARCHES)}"\n'
        f"Memory = {rng.choice(MEMORY)}\n"
        f'MatchmakerURL = "gk{i}.example.org:/jobmanager-condor"\n'
        f'SiteEnvironment = "SiteGatekeeperURL=ce{i}.example.org;SiteWorkingArea=/scratch"\n'
        f'GridSite = "BENCH.site{i:04d}.org"\n'
    )


def job_template(i: int, rng: random.Random) -> str:
    rank = "-CurMatches/real(MaxMatches)" if i % 2 else "0.0"
    return (
        "universe = globus\n"
        "+WANT_USCMS_MATCHMAKER = True\n"
        f"+RequestMemory = {1000 + i * 20}\n"
        f'Requirements = (Is_USCMS_Site =?= True) && (TARGET.Arch == "{rng.choice(ARCHES)}")\n'
        f"Rank = {rank}\n"
        "GlobusScheduler = $$(MatchmakerURL)\n"
        "environment = $$(SiteEnvironment)\n"
        "executable = /bin/analysis\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    args = parser.parse_args()
    n_jobs, n_templates, n_sites = SCALES[args.scale]

    with throwaway_database("negotiate"):
        from classads import ads, services
        from classads.models import JobAd
        from core import clock, gdpconfig
        from core.cycles import run_cycle
        from shares.models import User
        from simulation import demo

        demo.create_world()
        rng = random.Random(8)
        for i in range(n_sites):
            services.advertise(site_ad(i, rng))
        members = [
            (u, g)
            for u in User.objects.exclude(username__in=["admin", "pilot"])
            for g in u.grid_groups.all()
        ]
        templates = []
        for i in range(n_templates):
            user, group = members[i % len(members)]
            text = services.job_ad_text(ads.parse_job_ad(job_template(i, rng)), user, group)
            templates.append((user, group, text, hashlib.sha1(text.encode()).hexdigest()))
        now = clock.now()
        setup = gdpconfig.get("DefaultSetup")  # the grid's one Setup
        JobAd.objects.bulk_create(
            (
                JobAd(
                    owner=(t := templates[k % n_templates])[0],
                    owner_group=t[1],
                    name=f"bench-{k}",
                    setup=setup,
                    user_priority=rng.randint(0, 10),
                    text=t[2],
                    digest=t[3],
                    nodes=[{"name": "job", "cpu_time": 3600, "submit": ""}],
                    created=now,
                )
                for k in range(n_jobs)
            ),
            batch_size=5000,
        )
        t0 = time.perf_counter()
        if os.environ.get("BENCH_PROFILE"):
            import cProfile

            cProfile.runctx("run_cycle('negotiator')", globals(), locals(), "/tmp/negotiate.prof")
            return
        run = run_cycle("negotiator")
        wall = time.perf_counter() - t0
        if run.status != "success":
            raise SystemExit(f"the negotiator failed: {run.error}")
        c = run.counts
        context = {
            "scale": args.scale,
            "db": "postgresql",
            "idle_jobs": c["idle_jobs"],
            "autoclusters": c["autoclusters"],
            "site_ads": c["site_ads"],
            "matches": c["matches"],
            "held": c["held"],
            "evaluations": c["evaluations"],
            "decide_s": c["decide_seconds"],
        }
        emit("negotiation_cycle_s", wall, "s", **context)
        emit("negotiation_matches_per_s", c["matches"] / wall, "matches/s", **context)


if __name__ == "__main__":
    main()
