"""``python3 -m footprint ...``: the footprint command line, from Python.

Behaves like the ``footprint`` binary (same subcommands, options, output and exit status;
see docs/cli.md). One convenience: in ``run -- script.py ARGS``, a command whose first word
ends in ``.py`` and is not an executable file is run with this interpreter
(``sys.executable script.py ARGS``), and the run is named after the script unless ``-n`` is
given.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Optional, Sequence

from . import _footprint


def _python_command(args: list[str]) -> list[str]:
    """Prepends this interpreter to ``run -- script.py ...`` when the script is not
    executable."""
    if not args or args[0] != "run" or "--" not in args:
        return args
    split = args.index("--")
    command = args[split + 1:]
    if command and command[0].endswith(".py"):
        script = command[0]
        executable = os.path.isfile(script) and os.access(script, os.X_OK)
        if not executable:
            options = args[1:split]
            named = any(o in ("-n", "--name") or o.startswith(("--name=", "-n"))
                        for o in options)
            name = [] if named else ["-n", os.path.basename(script)]
            return ["run"] + name + options + ["--", sys.executable] + command
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit
    status."""
    args = _python_command(list(sys.argv[1:] if argv is None else argv))
    # Python ignores SIGPIPE and SIGXFSZ; a command started by `run` must not inherit that.
    restore = {}
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            restore[name] = signal.signal(getattr(signal, name), signal.SIG_DFL)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        return _footprint.cli_main(["footprint"] + args)
    finally:
        for name, handler in restore.items():
            signal.signal(getattr(signal, name), handler)


if __name__ == "__main__":
    sys.exit(main())
