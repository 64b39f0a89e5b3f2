"""Java class-data-sharing archives: the JVM options that write one, and those that map it.

A JVM started with -XX:ArchiveClassesAtExit writes the classes it loaded, parsed and verified, as it
exits; a later JVM on the same runtime and class path maps them (-XX:SharedArchiveFile) and starts on
less CPU. A JVM that maps a half-written archive crashes, so one is written under another name and
renamed once whole. Dev-cluster nodes, Kafka's tools in the tests and Spark's driver use these.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")  # CDS's notes on classes it skips, and a stale archive's warning


def mapping(archive: Path, quiet: tuple[str, ...] = QUIET) -> tuple[str, ...]:
    """The options that map `archive`; none while there is none (the JVM then starts as it would without)."""
    return (f"-XX:SharedArchiveFile={archive}", *quiet) if archive.exists() else ()


@contextlib.contextmanager
def writing(archive: Path, quiet: tuple[str, ...] = QUIET) -> Iterator[tuple[str, ...]]:
    """The options that make a JVM write `archive` as it exits. The JVM must have exited by the end of the
    block; the archive appears then, whole, unless the block raised (a JVM that was killed wrote none whole)."""
    partial = archive.with_name(f"{archive.name}.{os.getpid()}")  # this process's: others may write at once
    try:
        yield (f"-XX:ArchiveClassesAtExit={partial}", *quiet)
        if partial.exists():  # a JVM that did not start wrote nothing
            os.replace(partial, archive)
    finally:
        partial.unlink(missing_ok=True)
