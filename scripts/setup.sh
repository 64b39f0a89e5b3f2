#!/usr/bin/env bash
# Idempotent setup: Debian packages, .venv with the pinned requirements, Kafka jars, the test OIDC provider.
# Each step is skipped when its inputs have not changed (a hash stamp), so a second run is quick.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: %s\n' "$*" >&2; exit 1; }
stamp_ok() { [ -f "$2" ] && [ "$(cat "$2")" = "$1" ]; }

# 1. Tools we cannot install for you.
command -v java >/dev/null || die "Java 17+ not found: install it (Debian: apt-get install openjdk-17-jdk-headless)"
java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])' || die "Java 17+ required, found: $(java -version 2>&1 | head -n1)"
command -v mvn >/dev/null || die "Maven not found: install it (Debian: apt-get install maven)"
# The distribution's CPython first: Debian builds it with profile-guided and link-time optimisation,
# which a plain source build (pyenv's default) lacks; lagmon's own Python runs ~20% faster on it.
PY=$( [ -x /usr/bin/python3.11 ] && echo /usr/bin/python3.11 || command -v python3.11 || command -v python3 || true)
[ -n "$PY" ] || die "Python 3.11 not found: install it (Debian: apt-get install python3.11 python3.11-venv)"
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || die "Python 3.11+ required, found $("$PY" --version)"
PY_REAL=$("$PY" -c 'import os, sys; print(os.path.realpath(sys.executable))')
say "Python: $PY_REAL ($("$PY" -c 'import platform; print(platform.python_version())'))"

# 2. Debian packages: the SQLite and PostgreSQL JDBC drivers for Spark, Chromium for browser
#    tests, PostgreSQL for the store tests on the scale-path database, Prometheus (server and
#    promtool) for the tests of deploy/prometheus and deploy/grafana, Alertmanager for the
#    Alertmanager channel's tests (the tests run both themselves; the packages' services are not used).
DEBS="libxerial-sqlite-jdbc-java libpostgresql-jdbc-java chromium postgresql prometheus prometheus-alertmanager"
[ "$PY" != /usr/bin/python3.11 ] || DEBS="$DEBS python3.11-venv"  # Debian's venv module is a package of its own
missing=$(for p in $DEBS; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=$(command -v sudo || die "need root to install: $missing")
  say "installing Debian packages: $missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

# 3. Python virtual environment with the pinned requirements, and lagmon itself (editable).
#    A .venv made by another interpreter is made again.
req_hash=$( (cat requirements.txt requirements-test.txt pyproject.toml; echo "$PY_REAL") | sha256sum | cut -d' ' -f1)
if ! stamp_ok "$req_hash" .venv/.requirements.sha256; then
  say "installing Python requirements into .venv"
  made_by=$(sed -n 's/^home = //p' .venv/pyvenv.cfg 2>/dev/null || true)
  [ -z "$made_by" ] || [ "$made_by" = "$(dirname "$PY_REAL")" ] || rm -rf .venv
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  # --no-compile: byte-compiling every module of pyspark and the rest takes ~12 s; the few
  # that are imported compile on first use instead
  .venv/bin/python -m pip install -q --no-compile -r requirements-test.txt
  .venv/bin/python -m pip install -q --no-deps -e . >.venv/editable-install.log 2>&1 \
    || { cat .venv/editable-install.log; die "could not install lagmon itself into .venv"; }
  echo "$req_hash" > .venv/.requirements.sha256
fi

# 6 (in the background, as it needs only the .venv and Debian's JDBC jars). The Spark driver's class
#    archive (spark/class_archive.py): a cold `analyze` starts ~2.5 s sooner. Writing it keeps a core
#    busy for ~45-60 s while steps 4 and 5 mostly wait on Maven Central.
.venv/bin/python -m spark.write_class_archive --if-missing > .venv/class-archive.log 2>/dev/null &
archive_pid=$!

# 4. Apache Kafka jars from Maven Central.
pom_hash=$(sha256sum kafka/pom.xml | cut -d' ' -f1)
if ! stamp_ok "$pom_hash" kafka/libs/.pom.sha256; then
  say "fetching Apache Kafka jars with Maven into kafka/libs"
  rm -rf kafka/libs
  (cd kafka && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=libs) \
    || die "Maven could not fetch the Kafka jars (see the output above)"
  echo "$pom_hash" > kafka/libs/.pom.sha256
fi
# 4b. The dev cluster's Kafka Streams application (kafka/apps), compiled against those jars.
apps_hash=$(cat kafka/apps/*.java "kafka/libs/.pom.sha256" | sha256sum | cut -d' ' -f1)
if ! stamp_ok "$apps_hash" kafka/libs/apps/.sha256; then
  say "compiling the Kafka Streams demo application into kafka/libs/apps"
  rm -rf kafka/libs/apps
  javac -nowarn -cp "kafka/libs/*" -d kafka/libs/apps kafka/apps/*.java \
    || die "could not compile kafka/apps (see the output above)"
  echo "$apps_hash" > kafka/libs/apps/.sha256
fi
# 4c. The dev cluster's class archives (monitor/devcluster.py): a node starts ~1 s sooner on ~40 % less
#     CPU. They live beside the jars, so new jars mean new archives (~13 s).
if [ ! -f kafka/libs/node.jsa ]; then
  say "writing the dev cluster's class archives into kafka/libs"
  LAGMON_KAFKA_LIBS="$PWD/kafka/libs" .venv/bin/python -m monitor devcluster archive >/dev/null \
    || say "could not write the dev cluster's class archives: nodes start without them"
fi
# 5. The OpenID Connect provider the dashboard's login test runs (mock-oauth2-server), from Maven Central.
oidc_hash=$(sha256sum tests/oidc/pom.xml | cut -d' ' -f1)
if ! stamp_ok "$oidc_hash" tests/oidc/libs/.pom.sha256; then
  say "fetching the test OIDC provider with Maven into tests/oidc/libs"
  rm -rf tests/oidc/libs
  (cd tests/oidc && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=libs) \
    || die "Maven could not fetch the test OIDC provider (see the output above)"
  echo "$oidc_hash" > tests/oidc/libs/.pom.sha256
fi
# 6, done.
if wait "$archive_pid"; then
  sed 's/^/setup: /' .venv/class-archive.log
else
  say "could not write the Spark class archive: analyze runs without it (python -m spark.write_class_archive says why)"
fi
say "ready"
