"""The command line, one module per family of commands; `python -m monitor` (monitor/__main__.py) wires them.

Imports are at the top of a module, except those of SQLAlchemy (the store, and the
alert and health modules that reach it), Apprise, the Kafka client and PySpark:
every command module is loaded by every command. With them at the top, `python -m
monitor --help` took 0.7 s and 50 MB RSS instead of 0.14 s and 21 MB (`/usr/bin/time
-f "%e s %M KB"`, 2026-11-27). (The collector's supervisor, which runs as long as the
collector, then sheds even these by exec: monitor/supervisor.py.) Each such import
says `# lazy:` beside it.
"""
