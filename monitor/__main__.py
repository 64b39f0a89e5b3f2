"""lagmon's command line: `python -m monitor COMMAND ...` (a thin layer over the library)."""
from __future__ import annotations

import argparse
import json
import sys

from monitor.models import LagmonError


def cmd_devcluster(args: argparse.Namespace) -> int:
    from monitor import devcluster

    if args.action == "start":
        cluster = devcluster.start(args.dir, nodes=args.nodes)
        print(f"Kafka ready ({len(cluster.nodes)} node{'s' * (len(cluster.nodes) > 1)}): bootstrap {cluster.bootstrap}")
        print(f"cluster folder: {cluster.dir}")
    elif args.action == "stop":
        cluster = devcluster.stop(args.dir)
        print(f"stopped {len(cluster.nodes)} node(s) in {cluster.dir}")
    elif args.action == "status":
        status = devcluster.load(args.dir).status()
        if args.json:
            print(json.dumps(status))
        else:
            print(f"bootstrap {status['bootstrap']}  ({status['dir']})")
            for n in status["nodes"]:
                print(f"  node {n['id']}  port {n['port']}  {'running' if n['running'] else 'stopped'}")
        return 0 if any(n["running"] for n in status["nodes"]) else 3
    elif args.action == "stop-node":
        devcluster.stop_node(args.dir, args.node, kill=args.kill)
        print(f"node {args.node} stopped")
    elif args.action == "start-node":
        devcluster.start_node(args.dir, args.node)
        print(f"node {args.node} running")
    return 0


def cmd_sim(args: argparse.Namespace) -> int:
    from monitor import sim

    return sim.main(args)


def cmd_demo(args: argparse.Namespace) -> int:
    from monitor import demo

    return demo.run(args.dir)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m monitor", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    dc = sub.add_parser("devcluster", help="run a real local Kafka (KRaft) for demos and tests")
    dc_sub = dc.add_subparsers(dest="action", required=True)
    for name, helptext in [("start", "create (first time) and start the cluster"),
                           ("stop", "stop every node (data is kept)"),
                           ("status", "show bootstrap servers and which nodes run"),
                           ("stop-node", "stop one node (failover tests)"),
                           ("start-node", "start one stopped node")]:
        p = dc_sub.add_parser(name, help=helptext)
        p.add_argument("--dir", default=None, help="cluster folder (default .lagmon/devcluster)")
        if name == "start":
            p.add_argument("--nodes", type=int, choices=(1, 3), default=1)
        if name == "status":
            p.add_argument("--json", action="store_true")
        if name in ("stop-node", "start-node"):
            p.add_argument("node", type=int)
        if name == "stop-node":
            p.add_argument("--kill", action="store_true", help="SIGKILL, as if the machine died")
    dc.set_defaults(func=cmd_devcluster)

    from monitor.sim import add_arguments as add_sim_arguments

    add_sim_arguments(sub.add_parser("sim", help="run a workload scenario with real producers and consumers"))
    sub.choices["sim"].set_defaults(func=cmd_sim)

    p = sub.add_parser("demo", help="everything on embedded defaults: local Kafka, workload, lagmon")
    p.add_argument("--dir", default=None, help="cluster folder (default .lagmon/devcluster)")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "dir", "unset") is None:
        from monitor.devcluster import DEFAULT_DIR

        args.dir = DEFAULT_DIR
    try:
        return args.func(args)
    except LagmonError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
