"""The driver's class archive (spark/class_archive.py): written once, then mapped by the next driver JVMs."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from monitor.config import SparkSettings
from spark.class_archive import archive_path
from spark.session import jdbc_jar

WRITE = """
from monitor.config import SparkSettings
from spark.write_class_archive import write_archive
write_archive(SparkSettings.from_env(), {url!r})
"""
USE = """
from monitor.config import SparkSettings
from spark.session import build_session
options = "-XX:SharedArchiveFile={archive} -Xshare:on -Xlog:class+load=info:file={log}"
spark = build_session(SparkSettings.from_env(), {url!r}, {{"spark.driver.extraJavaOptions": options}})
assert spark.range(5).groupBy().sum().first()[0] == 10
spark.stop()
"""


def python(code: str, tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_archive_written_by_setup_serves_the_next_driver_jvms_spark_classes(tmp_path):
    log, url = tmp_path / "class-load.log", f"sqlite:///{tmp_path / 'store.db'}"
    archive = archive_path(jdbc_jar(SparkSettings.from_env(), url))
    if not archive.exists():  # `make setup` could not write it (it says so): write it as setup does
        python(WRITE.format(url=url), tmp_path)  # a fresh JVM: it writes as it exits
    assert archive.stat().st_size > 50 * 2**20
    # -Xshare:on: a JVM that cannot map the archive refuses to start, so this fails rather than runs slower
    python(USE.format(url=url, archive=archive, log=log), tmp_path)
    loaded = log.read_text().splitlines()
    from_archive = [line for line in loaded if "source: shared objects file (top)" in line]
    assert any(" org.apache.spark.SparkContext " in line for line in from_archive), loaded[:20]
    assert len(from_archive) > 2000, f"only {len(from_archive)} of {len(loaded)} classes came from the archive"
