import json

from django.core.management.base import BaseCommand, CommandError

from brokerage.topology_import import TopologyError, import_topology


class Command(BaseCommand):
    help = (
        "Load PanDA queues, storages, nuclei, links, datasets, software and worker-node GPUs "
        "from a JSON file (sections: nuclei, storages, queues, links, datasets, software, gpus)."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="the JSON file ('-' for standard input)")

    def handle(self, path, **options):
        try:
            if path == "-":
                import sys

                data = json.load(sys.stdin)
            else:
                with open(path, encoding="utf-8") as fh:
                    data = json.load(fh)
        except (OSError, json.JSONDecodeError) as exc:
            raise CommandError(f"{path}: {exc}") from None
        try:
            counts = import_topology(data)
        except TopologyError as exc:
            raise CommandError(f"nothing imported: {exc}") from None
        self.stdout.write(
            self.style.SUCCESS(", ".join(f"{n} {section}" for section, n in counts.items() if n))
        )
