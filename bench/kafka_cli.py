"""Kafka's own command-line tools, run from the jars setup fetched: the oracle for lagmon's numbers.

The tests compare with them; bench_collector.py times `kafka-consumer-groups --describe` as the peer.
The tests import this module from here (pytest.ini puts bench/ on their path).
"""

from __future__ import annotations

import json
import re
import subprocess
from contextlib import nullcontext

from monitor import class_archives, jvm
from monitor.devcluster import LIBS_DIR

CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"


# The tools' classes, archived by the first tool run (class-data sharing, monitor/class_archives.py): a tool
# then starts on ~0.8 CPU-s instead of ~1.5, in ~0.6 s instead of ~1.3 (project machine, 2026-11-28).
TOOLS_ARCHIVE = LIBS_DIR / "tools.jsa"
JVM_WARNINGS_TO_STDERR = ("-Xlog:disable", "-Xlog:all=warning:stderr")  # never into a tool's output


def java_command(
    main_class: str, *args: str, jvm_options: tuple[str, ...] | None = None, classpath: str = f"{LIBS_DIR}/*"
) -> list[str]:
    """A Kafka tool's command line: a small, quickly started JVM on the jars setup fetched
    (jvm_options: the class archive's when not given)."""
    return [
        "java",
        "-Xmx256m",
        jvm.QUICK_JIT,
        *(class_archives.mapping(TOOLS_ARCHIVE, JVM_WARNINGS_TO_STDERR) if jvm_options is None else jvm_options),
        "-Dlog4j2.level=error",
        "-cp",
        classpath,
        main_class,
        *args,
    ]


def parse_concatenated_json(text: str) -> list[dict]:
    """ConsoleConsumer's formatters print JSON objects back to back; anything else (a log line) is skipped."""
    decoder, out, i = json.JSONDecoder(), [], 0
    while (i := text.find("{", i)) >= 0:
        try:
            obj, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            i += 1
            continue
        out.append(obj)
    return out


def console_arguments(bootstrap: str, partition: int, formatter: str, *options: str) -> list[str]:
    """ConsoleConsumer's arguments for one partition of __consumer_offsets, from its start, through one of
    Kafka's formatters (`options`: e.g. --max-messages N, --timeout-ms T)."""
    return [
        "--bootstrap-server",
        bootstrap,
        "--topic",
        "__consumer_offsets",
        "--partition",
        str(partition),
        "--offset",
        "earliest",
        *options,
        "--formatter",
        f"org.apache.kafka.tools.consumer.{formatter}",
    ]


def print_offsets_partition(
    bootstrap: str, partition: int, records: int, formatter: str = "OffsetsMessageFormatter"
) -> list[dict]:
    """The first `records` records of a partition of __consumer_offsets, as Kafka's ConsoleConsumer and
    `formatter` print them (a partition still written to never goes quiet for --timeout-ms to end it)."""
    options = ("--max-messages", str(records), "--timeout-ms", "10000")
    out = run_tool(CONSOLE_CONSUMER, *console_arguments(bootstrap, partition, formatter, *options), timeout=300)
    return parse_concatenated_json(out)


def run_tool(main_class: str, *args: str, timeout: float = 120, archive: bool = True) -> str:
    """A tool's output; the first run writes the class archive the next ones map (archive=False: neither,
    a tool as Kafka's own scripts start it)."""
    writing = archive and not TOOLS_ARCHIVE.exists()
    with class_archives.writing(TOOLS_ARCHIVE, JVM_WARNINGS_TO_STDERR) if writing else nullcontext() as options:
        command = java_command(main_class, *args, jvm_options=options if archive else ())
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise AssertionError(f"{main_class} failed: {done.stderr[-2000:]}")
    return done.stdout


def describe_groups(bootstrap: str, *groups: str) -> dict[tuple[str, str, int], dict]:
    """`kafka-consumer-groups --describe` parsed: (group, topic, partition) -> its columns."""
    selector = ["--all-groups"] if not groups else [a for g in groups for a in ("--group", g)]
    out = run_tool(CONSUMER_GROUPS, "--bootstrap-server", bootstrap, "--describe", *selector)
    rows: dict[tuple[str, str, int], dict] = {}
    header: list[str] | None = None
    for line in out.splitlines():
        fields = line.split()
        if not fields or line.startswith("Consumer group"):
            continue
        if fields[0] == "GROUP":
            header = fields
            continue
        if header and len(fields) == len(header):
            row = dict(zip(header, fields, strict=True))
            rows[(row["GROUP"], row["TOPIC"], int(row["PARTITION"]))] = row
    return rows


SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
STREAMS_GROUPS = "org.apache.kafka.tools.streams.StreamsGroupCommand"


def describe_share_group(bootstrap: str, group: str, view: str) -> list[dict]:
    """`kafka-share-groups --describe --group G --members|--offsets|--state`, one dict per row."""
    return table_rows(run_tool(SHARE_GROUPS, "--bootstrap-server", bootstrap, "--describe", "--group", group, view))


def describe_streams_group(bootstrap: str, group: str, *views: str) -> list[dict]:
    """`kafka-streams-groups --describe --group G --members|--offsets|--state [--verbose]`, one dict per row."""
    return table_rows(run_tool(STREAMS_GROUPS, "--bootstrap-server", bootstrap, "--describe", "--group", group, *views))


def table_rows(out: str) -> list[dict]:
    """The tools' tables: a header starting GROUP, then rows; the last column may hold spaces
    (a streams member's ASSIGNMENTS) or be empty."""
    rows: list[dict] = []
    header: list[str] | None = None
    for line in out.splitlines():
        if line.startswith("GROUP "):
            header = line.replace("COORDINATOR (ID)", "COORDINATOR").split()
            continue
        if header and line.strip():
            fields = re.sub(r"\s+\(", "(", line).split(None, len(header) - 1)  # "host:port (1)": one field
            rows.append(dict(zip(header, fields + [""] * (len(header) - len(fields)), strict=True)))
    return rows
