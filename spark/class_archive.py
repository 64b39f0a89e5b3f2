"""A class-data-sharing archive of the Spark driver's classes: a cold `analyze` starts ~2.5 s sooner.

The driver JVM loads and verifies thousands of classes while Spark starts and runs its first jobs:
about 2.5 s of a small store's first run (docs/architecture.md §8). Java's dynamic CDS archive
(-XX:ArchiveClassesAtExit) keeps them parsed and verified in a file that later JVMs map
(-XX:SharedArchiveFile). It is valid only for the JVM and the class path that wrote it, so its name
carries a key of both, and a session uses it only when the file of its own key exists; otherwise the
JVM starts as it would without. `make setup` writes it with `python -m spark.write_class_archive`
(~45-60 s; ~190 MB in the environment's share/lagmon).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

from monitor import class_archives


def _java_home() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    java = Path(home, "bin", "java") if home and Path(home, "bin", "java").exists() else shutil.which("java")
    return Path(java).resolve().parents[1] if java else None


def _fingerprint(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return f"{path}:missing"
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def archive_path(jar: str) -> Path:
    """Where the archive for this JVM, Spark and JDBC jar lives (the key changes when any of them does)."""
    import pyspark

    home = _java_home()
    parts = [
        pyspark.__version__,
        _fingerprint(Path(pyspark.__file__).parent / "jars"),
        _fingerprint(home / "lib" / "modules") if home else "no java",  # the JDK's runtime image
        *(_fingerprint(Path(j)) for j in jar.split(",")),
    ]
    key = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    return Path(sys.prefix) / "share" / "lagmon" / f"spark-classes-{key}.jsa"


def java_options(jar: str) -> str | None:
    """The driver's JVM options that map the archive, or None when there is none for this key."""
    return " ".join(class_archives.mapping(archive_path(jar))) or None
