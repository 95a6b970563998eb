"""The words a world is written in: domains, people, reasons, filler; small text helpers."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import date

from .params import MONTHS

# None of these words may overlap with ABSENT_SUBJECTS: abstention tasks depend on it.


@dataclass(frozen=True)
class _Aspect:
    name: str
    key: str
    techs: tuple[str, ...]


_ASPECTS: tuple[_Aspect, ...] = (
    _Aspect("storage backend", "storage", ("PostgreSQL", "SQLite", "MySQL", "MariaDB", "CockroachDB")),
    _Aspect("message queue", "queue", ("RabbitMQ", "NATS", "Amazon SQS", "Beanstalkd")),
    _Aspect("cache", "cache", ("Redis", "Memcached", "Varnish", "Hazelcast")),
    _Aspect("search engine", "search", ("OpenSearch", "Meilisearch", "Typesense", "Solr")),
    _Aspect("serialization format", "serialization", ("Protocol Buffers", "Avro", "MessagePack")),
    _Aspect("job scheduler", "scheduler", ("cron", "Celery beat", "Nomad periodic jobs")),
    _Aspect("object storage", "object_storage", ("MinIO", "Ceph", "Amazon S3")),
    _Aspect("metrics backend", "metrics", ("Prometheus", "InfluxDB", "Graphite", "VictoriaMetrics")),
)
_DOMAINS = (
    "orders", "billing", "inventory", "shipping", "catalog", "accounts", "notifications",
    "reporting", "pricing", "returns", "payments", "reviews", "loyalty", "warehouse",
    "invoicing", "support", "analytics", "identity", "scheduling", "recommendations",
    "subscriptions", "fulfilment", "procurement", "ledger", "media", "messaging", "onboarding",
    "partners", "tax", "routing",
)
_QUALIFIERS = (
    "", "north", "river", "amber", "cedar", "delta", "ember", "harbor", "juniper", "kite",
    "lumen", "maple", "nimbus", "orchid", "pine", "quartz", "raven", "sierra", "tundra",
    "umber", "violet", "willow", "yarrow", "zephyr", "birch",
)
_PEOPLE = (
    "Priya", "Tomás", "Mei", "Jonas", "Aisha", "Dmitri", "Lena", "Omar", "Sofia", "Kwame",
    "Ines", "Ravi", "Hana", "Mateo", "Yusuf", "Elif",
)
# (keyword a reader must connect to the decision, measured detail that only the report
# holds, and the shape of the number in that detail)
_REASONS = (
    ("write timeouts", "{n}% of writes timed out at peak load", "percent"),
    ("tail latency", "latency at the 99th percentile reached {n} ms in the nightly batch", "ms"),
    ("operational toil", "{n} hours per month went into manual maintenance", "small"),
    ("memory pressure", "the nodes ran out of memory {n} times in one month", "small"),
    ("hosting cost", "hosting came to {n} euros per month for a small workload", "money"),
    ("failover gaps", "{n} messages were lost during the failover drill", "count"),
)
_ACTIONS = (
    "write the failover runbook for the {topic} {aspect}",
    "add an alert on {aspect} errors in the {topic}",
    "document the {aspect} settings of the {topic}",
    "add a load test for the {topic} {aspect}",
    "remove the old {aspect} client from the {topic}",
    "schedule a restore drill for the {topic} {aspect}",
)
ABSENT_SUBJECTS: tuple[tuple[str, str], ...] = (
    ("Kubernetes autoscaling", "kubernetes"),
    ("GraphQL federation", "graphql"),
    ("the Terraform state backend", "terraform"),
    ("the Android build pipeline", "android"),
    ("Snowflake warehouse costs", "snowflake"),
    ("the Salesforce integration", "salesforce"),
    ("blockchain receipts", "blockchain"),
    ("the Kotlin rewrite", "kotlin"),
    ("the Figma design tokens", "figma"),
    ("WebAssembly plugins", "webassembly"),
)
_FILLER_SENTENCES = (
    "The flaky pipeline test turned out to depend on the runner's clock.",
    "We agreed to keep pull requests under four hundred changed lines where possible.",
    "The on-call rota moves to weekly shifts starting next month.",
    "Someone should tidy the onboarding checklist; half the links point to old pages.",
    "The date picker now refuses ranges that end before they start.",
    "Lint warnings are errors in CI from now on, after a two-week grace period.",
    "The retro board had more green than red this time.",
    "Two new starters join next quarter and need laptops ordered early.",
    "The colour tokens in the style guide were renamed; the old names still work for now.",
    "Dependency updates go out in one batch on the first Tuesday of the month.",
    "The coffee machine on the third floor is fixed, for the record.",
    "Release notes are written in the pull request, not on release day.",
    "Screenshots in the handbook are out of date after the navigation redesign.",
    "A11y review found three buttons without labels; all fixed the same day.",
    "The team lunch moves to Thursdays because of the planning meeting.",
    "Build times dropped by a minute after caching the wheel downloads.",
    "The wiki search is bad; most people grep the docs folder instead.",
    "Pairing rotation continues; nobody wants to go back to solo tickets.",
    "The print stylesheet for invoices lost its margins in the last refactor.",
    "A customer asked for dark reports; design will mock something up.",
    "Code owners file updated so reviews stop landing on people who left.",
    "We spent too long on estimates again; next time we timebox it to ten minutes.",
    "The staging data refresh now runs on Sunday night instead of Monday morning.",
    "Error messages in the admin screens should say what to do next.",
    "The hackathon projects will be demoed at the end of the month.",
)
_FILLER_TITLES = (
    "CI notes", "Frontend sync", "Team retro", "Onboarding", "Dependency sweep",
    "Release train", "Accessibility review", "Docs cleanup", "Planning notes", "Hiring sync",
    "Offsite logistics", "Style guide", "Build times", "Support rotation",
)
_LOG_EVENTS = ("build ok", "tests passed", "lint clean", "cache hit", "retry 1/3", "job done")
_CHATTER_LINES = (
    "Refactored the {topic} test fixtures; nothing functional changed.",
    "The {topic} dashboard got a new panel for request counts.",
    "Renamed a few modules in the {topic} for consistency.",
    "Reviewed open pull requests for the {topic}; two merged, one waiting on tests.",
    "The {topic} README now explains how to run it locally.",
    "Paired on a bug in the {topic} where a form lost its state on reload.",
    "Looked at error budgets for the {topic}; well within target this month.",
    "Wrote more unit tests around input validation in the {topic}.",
)




def _measure(rng: random.Random, reason: tuple[str, str, str]) -> tuple[str, str]:
    """Fill a reason's detail with a seeded number; return (detail, the number as written)."""
    shape = reason[2]
    if shape == "percent":
        number = f"{rng.randint(2, 9)}.{rng.randint(1, 9)}"
    elif shape == "ms":
        number = str(rng.randint(12, 95) * 10)
    elif shape == "small":
        # Two digits at least, so the number is specific enough to count as evidence.
        number = str(rng.randint(11, 48))
    elif shape == "money":
        number = f"{rng.randint(2, 9)},{rng.randint(1, 9)}00"
    else:
        number = str(rng.randint(120, 9800))
    return reason[1].format(n=number), number


def _long_date(day: date) -> str:
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _tech_pattern(tech: str) -> str:
    """A regex finding a technology by name or slug, used by downstream not_matches checks."""
    names = sorted({re.escape(tech.lower()), re.escape(_slug(tech))})
    return r"\b(" + "|".join(names) + r")\b"


def date_variants(iso: str) -> tuple[str, ...]:
    """The spellings under which a ledger date counts as present in a file."""
    day = date.fromisoformat(iso)
    return (iso, _long_date(day))


def _normalise(text: str) -> str:
    return " ".join(text.lower().split())
