"""Start and stop a real local Apache Kafka (KRaft, 1 or 3 nodes) from the jars setup fetched.

Each node is broker+controller, listens on loopback only, on free ports chosen at
creation. A cluster lives in one folder (`cluster.json`, one `node-N/` per node
with its config, data and `server.log`), so several clusters can run side by side.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from monitor import class_archives, jvm
from monitor.config import DevelopmentSettings
from monitor.models import DevClusterError

PROJECT_DIR = Path(__file__).resolve().parent.parent
DEFAULT_DIR = PROJECT_DIR / ".lagmon" / "devcluster"
# A tool of the demo, tests and benchmarks, which import these: its settings are read once, here.
_SETTINGS = DevelopmentSettings.from_env()
LIBS_DIR = _SETTINGS.kafka_libs
HEAP = _SETTINGS.devcluster_heap  # 384m by default: 3 nodes fit easily in 24 GiB
NODE_JIT = [jvm.QUICK_JIT] if _SETTINGS.devcluster_quick_jit else []
STOP_WAIT_S = 20.0
# Class-data sharing: the classes a node and the storage tool load, kept parsed and verified in files that
# later JVMs map. A node then starts on ~2.2 CPU-s instead of ~4.0 and ~1 s sooner (project machine,
# 2026-11-29). `make setup` writes them (write_class_archives); they live beside the jars, so new jars drop
# them, and a JVM whose version or class path differs starts as it would without.
NODE_ARCHIVE = LIBS_DIR / "node.jsa"
FORMAT_ARCHIVE = LIBS_DIR / "format.jsa"

LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = OUT
logger.kafka.name = kafka
logger.kafka.level = info
logger.apache.name = org.apache.kafka
logger.apache.level = warn
logger.coordinator.name = org.apache.kafka.coordinator.group
logger.coordinator.level = info
"""


@dataclass
class Node:
    id: int
    port: int
    controller_port: int
    pid: int | None = None
    sasl_port: int | None = None  # SASL_PLAINTEXT listener with SCRAM-SHA-512, when created with one


@dataclass
class Cluster:
    dir: Path
    cluster_id: str
    nodes: list[Node]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    @property
    def sasl_bootstrap(self) -> str | None:
        """The SCRAM listeners (the PLAINTEXT one stays for the brokers themselves and for tooling)."""
        if self.nodes[0].sasl_port is None:
            return None
        return ",".join(f"127.0.0.1:{n.sasl_port}" for n in self.nodes)

    def node(self, node_id: int) -> Node:
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise DevClusterError(f"node {node_id} is not in this cluster (nodes: {[n.id for n in self.nodes]})")

    def status(self) -> dict:
        """The `status --json` shape: bootstrap plus each node's id, port and liveness."""
        return {
            "dir": str(self.dir),
            "bootstrap": self.bootstrap,
            "cluster_id": self.cluster_id,
            "nodes": [
                {
                    "id": n.id,
                    "port": n.port,
                    "controller_port": n.controller_port,
                    "sasl_port": n.sasl_port,
                    "pid": n.pid,
                    "running": is_running(n.pid),
                }
                for n in self.nodes
            ],
        }

    def save(self) -> None:
        data = {"cluster_id": self.cluster_id, "nodes": [asdict(n) for n in self.nodes]}
        tmp = self.dir / "cluster.json.tmp"
        tmp.write_text(json.dumps(data, indent=2))
        tmp.replace(self.dir / "cluster.json")


def load(cluster_dir: Path | str = DEFAULT_DIR) -> Cluster:
    """The cluster described in `cluster_dir`, or a clear error if there is none."""
    cluster_dir = Path(cluster_dir)
    try:
        data = json.loads((cluster_dir / "cluster.json").read_text())
    except FileNotFoundError:
        raise DevClusterError(
            f"no dev cluster in {cluster_dir} (start one with: python -m monitor devcluster start)"
        ) from None
    return Cluster(cluster_dir, data["cluster_id"], [Node(**n) for n in data["nodes"]])


def start(
    cluster_dir: Path | str = DEFAULT_DIR,
    nodes: int = 1,
    timeout: float = 60.0,
    scram_user: tuple[str, str] | None = None,
    broker_config: Mapping[str, str] | None = None,
) -> Cluster:
    """Create (first time) and start every node; return once metadata answers from all of them.

    `scram_user` (name, password) adds a SASL_PLAINTEXT listener with SCRAM-SHA-512 and
    that one user at creation; the password is written nowhere but Kafka's own metadata.
    `broker_config` overrides server.properties at creation (a test's older-broker stand-in).
    """
    cluster_dir = Path(cluster_dir).resolve()
    java = _java()
    _check_libs()
    if (cluster_dir / "cluster.json").exists():
        cluster = load(cluster_dir)
        if len(cluster.nodes) != nodes:
            raise DevClusterError(
                f"{cluster_dir} holds a {len(cluster.nodes)}-node cluster, not {nodes}: "
                f"stop it and remove the folder, or pick another --dir"
            )
    else:
        cluster = _create(cluster_dir, nodes, java, scram_user, broker_config or {})
    launched = []
    for node in cluster.nodes:
        if not is_running(node.pid):
            _launch(cluster, node, java)
            launched.append(node)
    cluster.save()
    try:
        wait_ready(cluster, timeout=timeout, expect=[n.id for n in cluster.nodes])
    except DevClusterError:  # never leave half a cluster running behind an error
        for node in launched:
            if is_running(node.pid):
                os.kill(node.pid, signal.SIGKILL)
        _wait_exit(launched)
        raise
    return cluster


def stop(cluster_dir: Path | str = DEFAULT_DIR) -> Cluster:
    """Stop every node (SIGTERM, then SIGKILL after a grace period); data stays for a restart."""
    cluster = load(cluster_dir)
    running = [n for n in cluster.nodes if is_running(n.pid)]
    for n in running:
        os.kill(n.pid, signal.SIGTERM)
    _wait_exit(running)
    for n in cluster.nodes:
        n.pid = None
    cluster.save()
    return cluster


def destroy(cluster_dir: Path | str) -> None:
    """Stop the cluster and delete its folder (for tests that want nothing left behind)."""
    if (Path(cluster_dir) / "cluster.json").exists():
        stop(cluster_dir)
    shutil.rmtree(cluster_dir, ignore_errors=True)


def stop_node(cluster_dir: Path | str, node_id: int, kill: bool = False) -> Cluster:
    """Stop one node, cleanly or (kill=True) as if the machine died."""
    cluster = load(cluster_dir)
    node = cluster.node(node_id)
    if is_running(node.pid):
        os.kill(node.pid, signal.SIGKILL if kill else signal.SIGTERM)
        _wait_exit([node])
    node.pid = None
    cluster.save()
    return cluster


def start_node(cluster_dir: Path | str, node_id: int, timeout: float = 60.0) -> Cluster:
    """Start one stopped node and wait until the cluster lists it again and every replica is back in sync.

    The second wait is what an operator checks before stopping the next broker: stopping one while
    a partition's only in-sync replica is on it takes that partition offline (its coordinator too).
    """
    cluster = load(cluster_dir)
    node = cluster.node(node_id)
    if not is_running(node.pid):
        _launch(cluster, node, _java())
        cluster.save()
    wait_ready(cluster, timeout=timeout, expect=[node_id])
    wait_in_sync(cluster, timeout)
    return cluster


def wait_in_sync(cluster: Cluster, timeout: float) -> None:
    """Poll metadata until no partition has a replica out of sync."""
    from monitor.kafka import fetch_under_replicated  # lazy: keeps `status` instant

    deadline = time.monotonic() + timeout
    while True:
        try:
            lagging = fetch_under_replicated(cluster.bootstrap)
        except Exception as e:  # KafkaException: a metadata request that timed out
            lagging = [str(e)]
        if not lagging:
            return
        if time.monotonic() > deadline:
            raise DevClusterError(f"replicas still out of sync after {timeout:.0f}s: {lagging[:5]}")
        time.sleep(0.2)


def wait_ready(cluster: Cluster, timeout: float, expect: list[int]) -> None:
    """Poll metadata until every expected broker is listed; fail fast with the log if a node died."""
    from monitor.kafka import fetch_broker_ids  # lazy: keeps `status` instant

    deadline = time.monotonic() + timeout
    while True:
        for n in cluster.nodes:
            if n.id in expect and not is_running(n.pid):
                raise DevClusterError(
                    f"node {n.id} (pid {n.pid}) exited during start-up; end of its log:\n{log_tail(cluster, n.id)}"
                )
        try:
            brokers, controller = fetch_broker_ids(cluster.bootstrap)
            # listening too: after a SIGKILL the metadata lists a node until its session times out
            if set(expect) <= brokers and controller >= 0 and all(_listening(cluster.node(n).port) for n in expect):
                return
        except Exception:  # KafkaException while the node is still starting
            pass
        if time.monotonic() > deadline:
            raise DevClusterError(
                f"cluster at {cluster.bootstrap} not ready after {timeout:.0f}s; "
                f"end of node {expect[0]}'s log:\n{log_tail(cluster, expect[0])}"
            )
        time.sleep(0.2)


def log_tail(cluster: Cluster, node_id: int, lines: int = 20) -> str:
    path = cluster.dir / f"node-{node_id}" / "server.log"
    if not path.exists():
        return "(no log yet)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def is_running(pid: int | None) -> bool:
    """True if `pid` is a live Kafka node (guards against a reused pid)."""
    if not pid:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    # cmdline reads empty while the exec is still under way: a node we just launched.
    return state != "Z" and (cmdline == b"" or b"kafka.Kafka" in cmdline)


def node_properties(cluster: Cluster, node: Node, overrides: Mapping[str, str] | None = None) -> str:
    """server.properties for one node: KRaft combined mode, sized for tests and demos."""
    n = len(cluster.nodes)
    rf, isr = min(3, n), min(2, n)
    voters = ",".join(f"{m.id}@127.0.0.1:{m.controller_port}" for m in cluster.nodes)
    sasl = node.sasl_port is not None
    props = {
        "process.roles": "broker,controller",
        "node.id": node.id,
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}"
        + (f",SASL_PLAINTEXT://127.0.0.1:{node.sasl_port}" if sasl else ""),
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}"
        + (f",SASL_PLAINTEXT://127.0.0.1:{node.sasl_port}" if sasl else ""),
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
        + (",SASL_PLAINTEXT:SASL_PLAINTEXT" if sasl else ""),
        "log.dirs": cluster.dir / f"node-{node.id}" / "data",
        "num.partitions": 3,
        "default.replication.factor": rf,
        "min.insync.replicas": 1,
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": 12,  # fewer than 50: faster first group, same code paths
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": isr,
        "share.coordinator.state.topic.replication.factor": rf,
        "share.coordinator.state.topic.min.isr": isr,
        "group.initial.rebalance.delay.ms": 0,
        "group.streams.initial.rebalance.delay.ms": 0,  # as for classic groups: a new group is assigned at once
        "group.coordinator.rebalance.protocols": "classic,consumer,share,streams",  # all four group types
        "share.coordinator.state.topic.num.partitions": 12,
        "group.share.min.record.lock.duration.ms": 1000,  # lets a share scenario's held records expire soon
        "group.min.session.timeout.ms": 1000,  # lets scenarios use short sessions
    }
    for kind in ("consumer", "share", "streams"):  # quick heartbeats and sessions, the same for each type
        props |= {
            f"group.{kind}.min.heartbeat.interval.ms": 500,
            f"group.{kind}.heartbeat.interval.ms": 1000,
            f"group.{kind}.min.session.timeout.ms": 3000,
            f"group.{kind}.session.timeout.ms": 10000,
        }
    props |= {
        "auto.create.topics.enable": "false",
        "log.flush.scheduler.interval.ms": 5000,
    }
    if sasl:
        props["sasl.enabled.mechanisms"] = "SCRAM-SHA-512"
        props["listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"] = (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        )
    return "".join(f"{k}={v}\n" for k, v in (props | dict(overrides or {})).items())


def _create(
    cluster_dir: Path,
    nodes: int,
    java: str,
    scram_user: tuple[str, str] | None,
    broker_config: Mapping[str, str],
    tool_options: Sequence[str] | None = None,
) -> Cluster:
    if nodes not in (1, 3):
        raise DevClusterError(f"--nodes must be 1 or 3, not {nodes}")
    cluster_dir.mkdir(parents=True, exist_ok=True)
    ports = _free_ports(3 * nodes)
    cluster = Cluster(
        cluster_dir,
        "",
        [
            Node(i + 1, ports[3 * i], ports[3 * i + 1], sasl_port=ports[3 * i + 2] if scram_user else None)
            for i in range(nodes)
        ],
    )
    cluster.cluster_id = compute_cluster_id()
    (cluster_dir / "log4j2.properties").write_text(LOG4J2)
    for node in cluster.nodes:
        node_dir = cluster_dir / f"node-{node.id}"
        node_dir.mkdir(exist_ok=True)
        (node_dir / "server.properties").write_text(node_properties(cluster, node, broker_config))
    scram = ["--add-scram", f"SCRAM-SHA-512=[name={scram_user[0]},password={scram_user[1]}]"] if scram_user else []
    with ThreadPoolExecutor(nodes) as pool:  # one JVM each: format the nodes in parallel
        list(
            pool.map(
                lambda node: _run_tool(
                    java,
                    [
                        "format",
                        "-t",
                        cluster.cluster_id,
                        "-c",
                        str(cluster_dir / f"node-{node.id}" / "server.properties"),
                        *scram,
                    ],
                    cluster_dir,
                    tool_options,
                ),
                cluster.nodes,
            )
        )
    cluster.save()
    return cluster


def compute_cluster_id() -> str:
    """A new cluster id as `kafka-storage random-uuid` makes one (a random Uuid whose string form does not
    start with "-", as Kafka's Uuid.randomUuid), without starting a JVM for it: a second of every creation."""
    from monitor.offsets_topic.decoder import topic_id_str  # here: every command imports this module

    while (cluster_id := topic_id_str(uuid.uuid4().bytes)).startswith("-"):
        pass
    return cluster_id


def _launch(cluster: Cluster, node: Node, java: str, jvm_options: Sequence[str] | None = None) -> subprocess.Popen:
    """Start one node's JVM (jvm_options: the class archive's when not given)."""
    node_dir = cluster.dir / f"node-{node.id}"
    for port in (p for p in (node.port, node.controller_port, node.sasl_port) if p):
        if not _port_free(port):
            raise DevClusterError(f"port {port} of node {node.id} is in use by another process")
    cmd = [
        java,
        f"-Xmx{HEAP}",
        f"-Xms{HEAP}",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        *NODE_JIT,
        *(class_archives.mapping(NODE_ARCHIVE) if jvm_options is None else jvm_options),
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={cluster.dir / 'log4j2.properties'}",
        "-cp",
        f"{LIBS_DIR}/*",
        "kafka.Kafka",
        str(node_dir / "server.properties"),
    ]
    with open(node_dir / "server.log", "ab") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, cwd=node_dir
        )
    node.pid = proc.pid
    return proc


def _run_tool(java: str, args: list[str], cwd: Path, jvm_options: Sequence[str] | None = None) -> str:
    cmd = [
        java,
        "-Xmx256m",
        jvm.QUICK_JIT,
        *(class_archives.mapping(FORMAT_ARCHIVE) if jvm_options is None else jvm_options),
        "-Dlog4j2.level=warn",
        "-cp",
        f"{LIBS_DIR}/*",
        "kafka.tools.StorageTool",
        *args,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if done.returncode != 0:
        raise DevClusterError(f"kafka-storage {args[0]} failed: {(done.stderr or done.stdout).strip()[-800:]}")
    return done.stdout


def write_class_archives() -> list[Path]:
    """Start and cleanly stop a throwaway one-node cluster whose JVMs write the class archives as they exit."""
    java = _java()
    _check_libs()
    with tempfile.TemporaryDirectory(prefix="lagmon-class-archive-") as tmp:
        with class_archives.writing(FORMAT_ARCHIVE) as options:
            cluster = _create(Path(tmp), 1, java, None, {}, options)
        with class_archives.writing(NODE_ARCHIVE) as options:
            node = _launch(cluster, cluster.nodes[0], java, options)
            try:
                wait_ready(cluster, timeout=120, expect=[1])
            finally:
                node.terminate()
                # the archive is written as the JVM exits; a node that had to be killed wrote none whole
                exited = node.wait(STOP_WAIT_S * 3)
            if exited not in (0, 128 + signal.SIGTERM):
                raise DevClusterError(f"the archiving node exited with {exited}:\n{log_tail(cluster, 1)}")
    return [FORMAT_ARCHIVE, NODE_ARCHIVE]


def _wait_exit(nodes: list[Node]) -> None:
    deadline = time.monotonic() + STOP_WAIT_S
    while any(is_running(n.pid) for n in nodes) and time.monotonic() < deadline:
        time.sleep(0.1)
    for n in nodes:
        if is_running(n.pid):
            os.kill(n.pid, signal.SIGKILL)
    while any(is_running(n.pid) for n in nodes):
        time.sleep(0.05)
    for n in nodes:  # reap our own children so they do not linger as zombies
        with contextlib.suppress(ChildProcessError, TypeError):
            os.waitpid(n.pid, os.WNOHANG)


def _java() -> str:
    java = shutil.which("java")
    if not java:
        raise DevClusterError(
            "Java 17+ is required to run Kafka: install it (Debian: apt-get install openjdk-17-jre-headless)"
        )
    return java


def _check_libs() -> None:
    if not any(LIBS_DIR.glob("kafka_2.13-*.jar")):
        raise DevClusterError(f"Kafka jars not found in {LIBS_DIR}: run `make setup` first")


def _free_ports(count: int) -> list[int]:
    """Ports the OS says are free now (held open together so they are distinct)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False
