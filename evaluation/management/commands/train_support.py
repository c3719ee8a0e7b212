"""``manage.py train_support --data-only``: build and summarise the claim-support pairs (issue 18 §3).

Only the data recipe exists (``evaluation/training/support_data.py``); training and shipping a support
classifier is not done yet (docs/models.md), so without ``--data-only`` the command says so and exits 2.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Claim-support pairs (SciFact claims train + FactCC-style swaps from the corpora); --data-only for now."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--seed", type=int, default=13)
        parser.add_argument("--data-only", action="store_true")
        parser.add_argument("--examples", type=int, default=6)

    def handle(self, *args: Any, **opts: Any) -> None:
        if not opts["data_only"]:
            raise CommandError(
                "train_support: no support classifier is trained yet (issue 18 section 3 is open, docs/models.md); "
                "run with --data-only to build and summarise the pairs"
            )
        from evaluation.training.support_data import build

        pairs = build(opts["seed"])
        by = Counter((p.source, p.label) for p in pairs)
        self.stdout.write(f"pairs: {len(pairs)}")
        for (source, label), n in sorted(by.items()):
            self.stdout.write(f"  {source:22s} {label:10s} {n}")
        self.stdout.write(f"transforms: {dict(Counter(p.transform for p in pairs if p.transform))}")
        for p in pairs[: opts["examples"]]:
            self.stdout.write(f"  [{p.source} {p.label} {p.transform}] {p.claim[:120]!r} | {p.evidence[:100]!r}")
