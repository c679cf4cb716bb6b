"""The scripted developer's life of bench/life.py: what is written, changed and asked, day by day.

All text is written for this benchmark. A memory has a key (the benchmark's name for it), the day
it is written, a category, a title and a body; a change writes a reworded body under the same title
and category on a later day (what an agent does when the user changes their mind: it does not know
the old entry's id), and names a marker, a phrase only the superseded text holds, that must never
be injected once the change is made. Prompts name the memories they need. Runbooks are written in
the first weeks and needed only after day 95, when they have gone cold: those prompts are the ones
where promotion should fire.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, timedelta

START = date(2026, 6, 1)  # a Monday
DAYS = 130
PROJECTS = {"alpha": "/home/dev/src/alpha", "beta": "/home/dev/src/beta", "gamma": "/home/dev/src/gamma"}


@dataclass
class Memory:
    key: str
    day: int
    category: str
    title: str
    body: str
    project: str | None = None  # None: about the developer or the team, relevant anywhere
    tags: tuple = ()
    prompts: tuple = ()  # realistic prompts this memory answers


@dataclass
class Change:
    key: str
    day: int
    body: str
    marker: str  # a phrase only the superseded text holds


@dataclass
class Prompt:
    text: str
    needs: tuple  # keys of the memories it needs
    recall_task: bool = False  # a task that should bring back a cold or archived memory
    reply: str | None = None   # the agent's answer, when written for the task (else it quotes the memory)


@dataclass
class Day:
    day: int
    project: str
    prompts: list = field(default_factory=list)


def M(key, day, category, title, body, project=None, tags=(), prompts=()):
    return Memory(key, day, category, title, body, project, tuple(tags), tuple(prompts))


MEMORIES = [
    # the developer and the team
    M("theme", 1, "preferences", "Editor theme",
      "The user prefers dark mode (Dracula) in VS Code and in the terminal.",
      prompts=("set up the editor colours for the new laptop the way I like them",)),
    M("indent", 2, "preferences", "Code style",
      "Python code uses 4 spaces, black with line length 100, and isort profile black.",
      prompts=("format this module the way we usually do",)),
    M("commits", 3, "preferences", "Commit messages",
      "Commit messages: imperative mood, a short summary line under 60 characters, then why the change was made.",
      prompts=("write the commit message for this fix",)),
    M("tests", 4, "preferences", "Test framework",
      "We write tests with pytest and hypothesis; no unittest classes in new code.",
      prompts=("add tests for the parser",)),
    M("reply_zh", 6, "preferences", "回复语言",
      "用户希望代码注释用英文，但和他讨论设计时用中文回复。",
      prompts=("帮我解释一下这个设计方案的取舍",)),
    M("standup", 1, "meetings", "Standup",
      "Daily standup is at 9:30 in the Aquarium room, 15 minutes, blockers first.",
      prompts=("when is standup tomorrow?",)),
    M("sprint", 2, "meetings", "Sprint length",
      "Sprints last two weeks and start on Wednesday with planning at 14:00.",
      prompts=("how long is our sprint and when does planning happen?",)),
    M("oncall", 8, "team", "On-call rotation",
      "On-call rotates weekly on Monday at 10:00; pages go to the #ops-pager channel; Lena owns the schedule.",
      prompts=("who do I ask to swap my on-call week?",)),
    M("weekly_zh", 9, "team", "团队周报",
      "团队周报每周五下午五点前发到 #weekly 频道，写本周完成的事和下周计划。",
      prompts=("周报什么时候交，发到哪里？",)),
    # alpha: the web shop
    M("a_db", 3, "projects/alpha", "Alpha database",
      "Alpha stores orders in PostgreSQL 16: we need transactions and the JSON operators.",
      "alpha", ("db",), ("which database does alpha use for orders?",)),
    M("a_api", 4, "projects/alpha", "API style",
      "Alpha's public API is REST with JSON bodies, versioned in the URL (/v1/...).",
      "alpha", ("api",), ("add an endpoint for order refunds to the alpha API",)),
    M("a_region", 5, "projects/alpha", "Deployment region",
      "Alpha runs in the Frankfurt region (eu-central-1) on two availability zones.",
      "alpha", ("infra",), ("where is alpha deployed?",)),
    M("a_auth", 7, "projects/alpha", "Login provider",
      "Alpha signs users in through Keycloak with OpenID Connect; sessions last 12 hours.",
      "alpha", ("auth",), ("the login session expires too early, where is that configured?",)),
    M("a_front", 10, "projects/alpha", "Frontend framework",
      "Alpha's storefront is built with Vue 3 and Vite; components use the composition API.",
      "alpha", ("frontend",), ("scaffold a new storefront component for the cart page",)),
    M("a_flags", 15, "projects/alpha", "Feature flags",
      "Feature flags for alpha live in Unleash; a flag older than 60 days must be removed.",
      "alpha", ("flags",), ("how do we roll out the new checkout behind a flag?",)),
    M("a_cache", 22, "projects/alpha", "Product cache",
      "Product pages are cached in Redis for 5 minutes; the cache key includes the currency.",
      "alpha", ("cache",), ("prices show in the wrong currency after a switch, could it be caching?",)),
    M("a_release", 30, "projects/alpha", "Alpha releases",
      "Alpha releases every Tuesday after the 11:00 check; hotfixes need two approvals.",
      "alpha", ("release",), ("can we ship the refund fix today?",)),
    M("a_rate", 44, "projects/alpha", "Rate limits",
      "The public API allows 100 requests per minute per key; partners get 1000.",
      "alpha", ("api",), ("a partner hits 429 errors, what is their limit?",)),
    M("a_zh", 52, "projects/alpha", "测试环境",
      "alpha 的测试环境部署在上海区域，数据库每晚两点从生产脱敏同步。",
      "alpha", ("infra",), ("alpha 的测试环境在哪个区域，数据多久同步一次？",)),
    # beta: the data pipeline
    M("b_orch", 4, "projects/beta", "Orchestrator",
      "Beta's pipelines run on Airflow 2 with the Kubernetes executor.",
      "beta", ("pipeline",), ("add a new daily job to the beta pipeline",)),
    M("b_wh", 6, "projects/beta", "Warehouse",
      "Beta loads everything into BigQuery, dataset analytics_prod, partitioned by event date.",
      "beta", ("warehouse",), ("which table should the new events land in?",)),
    M("b_retention", 12, "projects/beta", "Data retention",
      "Raw events are kept 400 days; personal data columns are dropped after 30 days.",
      "beta", ("privacy",), ("how long can we keep the raw clickstream?",)),
    M("b_alerts", 18, "projects/beta", "Pipeline alerts",
      "Failed beta jobs alert the #data-alerts channel and page only after two failed retries.",
      "beta", ("alerts",), ("the nightly job failed, who gets notified?",)),
    M("b_sla", 26, "projects/beta", "Beta SLA",
      "Dashboards must have yesterday's data by 07:00 CET; the finance export by 08:30.",
      "beta", ("sla",), ("how late can the finance export run?",)),
    M("b_schema", 37, "projects/beta", "Schema changes",
      "Event schemas live in the schema registry; a breaking change needs a new version and a 2-week overlap.",
      "beta", ("schema",), ("I want to rename a field in the checkout event",)),
    # gamma: the mobile app
    M("g_ios", 5, "projects/gamma", "Minimum iOS version",
      "Gamma supports iOS 16 and later; Android from API level 28.",
      "gamma", ("mobile",), ("can I use the new iOS 17 API in gamma?",)),
    M("g_train", 11, "projects/gamma", "Release train",
      "Gamma ships a release train every second Thursday; code freeze is the Monday before.",
      "gamma", ("release",), ("when is the next gamma code freeze?",)),
    M("g_crash", 16, "projects/gamma", "Crash reporting",
      "Gamma reports crashes to Sentry, project gamma-mobile; symbol files upload in CI.",
      "gamma", ("monitoring",), ("the crash reports have no symbols, how are they uploaded?",)),
    M("g_push", 24, "projects/gamma", "Push notifications",
      "Push notifications go through Firebase Cloud Messaging for both platforms.",
      "gamma", ("mobile",), ("set up push notifications for the order status",)),
    M("g_design", 33, "projects/gamma", "Design system",
      "Gamma's UI uses the shared design tokens package; no hard-coded colours in screens.",
      "gamma", ("ui",), ("build the new profile screen",)),
    # runbooks: written early, needed late
    M("rb_failover", 2, "runbooks", "Orders database failover",
      "To fail over the orders database, promote the Patroni replica with `patronictl failover orders`, "
      "check replication lag is zero first, then repoint PgBouncer and announce in #incidents.",
      tags=("runbook", "db")),
    M("rb_certs", 3, "runbooks", "TLS certificate rotation",
      "Certificates are issued by cert-manager; to rotate by hand delete the secret shop-tls and watch the "
      "Certificate resource become Ready, then reload the ingress.", tags=("runbook", "tls")),
    M("rb_restore", 5, "runbooks", "Restore from backup",
      "Backups are taken by pgBackRest every night; restore a point in time with `pgbackrest restore --type=time` "
      "into a scratch instance first, never straight into production.", tags=("runbook", "backup")),
    M("rb_cdn", 7, "runbooks", "CDN cache purge",
      "To purge the storefront CDN cache, run the purge-cdn workflow in CI with the path prefix; a full purge "
      "needs the tech lead's OK because origin load triples.", tags=("runbook", "cdn")),
    M("rb_kafka", 9, "runbooks", "Kafka consumer lag",
      "When the events consumer lags, check the partition skew with kcat, scale the consumer deployment to "
      "the partition count (12), and never reset offsets without a backfill plan.", tags=("runbook", "kafka")),
    M("rb_rollback", 12, "runbooks", "Rolling back a deploy",
      "Roll back alpha with `argocd app rollback alpha-prod` to the previous revision; database migrations "
      "are forward-only, so check the migration list before rolling back.", tags=("runbook", "deploy")),
]

CHANGES = [
    Change("theme", 60, "The user switched to light mode (Solarized Light) because of glare in the new office.",
           "Dracula"),
    Change("standup", 40, "Standup moved to 10:15, online in the team call, still 15 minutes.", "Aquarium"),
    Change("a_api", 90, "Alpha's API moves to GraphQL for all new endpoints; the REST routes stay frozen.",
           "versioned in the URL"),
    Change("a_region", 70, "Alpha moved to the Dublin region (eu-west-1) for the lower latency to Irish customers.",
           "Frankfurt"),
    Change("b_orch", 50, "Beta's pipelines now run on Dagster; Airflow was switched off after the migration.",
           "Kubernetes executor"),
    Change("sprint", 65, "Sprints are now one week long, planning on Monday at 10:00.", "start on Wednesday"),
    Change("a_auth", 80, "Alpha signs users in through Auth0 now; sessions last 24 hours.", "Keycloak"),
    Change("g_push", 75, "Gamma sends iOS pushes through APNs directly; FCM is used only for Android.",
           "for both platforms"),
    Change("a_zh", 85, "alpha 的测试环境已迁移到北京区域，数据库每周日同步一次。", "上海"),
    Change("oncall", 95, "On-call now rotates every two weeks on Wednesday; Marco owns the schedule.", "Lena"),
]

RECALL_TASKS = [  # (day, project, prompt, runbook key, the agent's reply): the runbook has gone cold by then
    # the replies follow the runbook in the agent's own words, as an agent answering from it would
    (100, "alpha", "the orders db primary is down, how do we fail over to the replica?", "rb_failover",
     "The primary is down, so we fail over to the Patroni replica: I'll confirm the replication lag is at zero, "
     "run `patronictl failover orders`, point PgBouncer at the new primary and post in #incidents."),
    (102, "alpha", "the shop certificate expires tomorrow, what did we do last time to rotate it?", "rb_certs",
     "Last time we let cert-manager issue a new one: I'll delete the shop-tls secret, wait for the Certificate "
     "resource to report Ready, and then reload the ingress."),
    (106, "beta", "someone dropped a table in staging, how do we get the data back from a backup?", "rb_restore",
     "We can get it from the nightly pgBackRest backup: a point-in-time restore with `pgbackrest restore "
     "--type=time` to just before the drop, into a scratch instance, then copy the table over from there."),
    (109, "alpha", "customers still see the old banner image, we need to clear the CDN", "rb_cdn",
     "I'll run the purge-cdn workflow in CI with the banner's path prefix only. A full purge would need the tech "
     "lead's OK, since it triples the load on the origin."),
    (114, "beta", "the events consumer is hours behind, what's our procedure?", "rb_kafka",
     "First I'll look at the partition skew with kcat, then scale the consumer deployment up to 12 replicas, one "
     "per partition. No offset resets unless we have a backfill plan."),
    (119, "alpha", "yesterday's alpha release broke checkout, roll it back", "rb_rollback",
     "Rolling back with `argocd app rollback alpha-prod` to the previous revision. The migrations are "
     "forward-only, so I'm checking yesterday's migration list first."),
    (122, "alpha", "primary database failover for orders: what are the steps again?", "rb_failover",
     "Steps: make sure replication lag is zero, run `patronictl failover orders`, repoint PgBouncer, and "
     "announce it in #incidents."),
    (126, "beta", "restore last night's backup of the orders db into a scratch instance", "rb_restore",
     "I'll restore last night's pgBackRest backup with `pgbackrest restore --type=time` into a scratch "
     "instance, never straight into production."),
]


def workdays() -> list[int]:
    return [d for d in range(DAYS) if (START + timedelta(days=d)).weekday() < 5]


def plan(seed: int = 7) -> list[Day]:
    """Each working day: a project, and two or three prompts about memories that exist by then
    (the day's project's, or the developer's and team's), plus the recall tasks on their days."""
    rng = random.Random(seed)
    by_key = {m.key: m for m in MEMORIES}
    tasks = {day: (project, text, key, reply) for day, project, text, key, reply in RECALL_TASKS}
    days = []
    for d in workdays():
        project = tasks[d][0] if d in tasks else rng.choice(sorted(PROJECTS))
        pool = [m for m in MEMORIES if m.day < d and m.prompts and m.project in (None, project)]
        chosen = rng.sample(pool, min(len(pool), rng.choice((2, 3))))
        prompts = [Prompt(rng.choice(m.prompts), (m.key,)) for m in chosen]
        if d in tasks:
            prompts.insert(0, Prompt(tasks[d][1], (tasks[d][2],), recall_task=True, reply=tasks[d][3]))
        days.append(Day(d, project, prompts))
    assert all(k in by_key for c in CHANGES for k in [c.key])
    return days


def when(day: int, hour: int = 9, minute: int = 0, second: int = 0) -> str:
    """The ISO clock of `day` at hh:mm:ss UTC (MEMSTRATA_NOW)."""
    return f"{START + timedelta(days=day)}T{hour:02d}:{minute:02d}:{second:02d}+00:00"


assert all((START + timedelta(days=day)).weekday() < 5 for day, *_ in RECALL_TASKS), "a recall task on a weekend"
