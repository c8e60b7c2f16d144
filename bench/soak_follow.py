"""The long soak of a live ssh source: `python bench/soak_follow.py [--minutes 30]`.

It runs tests/test_soak.py (a real sshd on 127.0.0.1, 5,000 lines/s, rotation every 10 s by rename and
copytruncate in turn, 5 dropped connections spread over the run) for the given time instead of the
60 s of `make test`, and prints the result: lines written and received, lost, repeated, and the
memory (this process and its children: the live worker and ssh) with its slope in MiB a minute.
Needs openssh-server and openssh-client, like the test.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from tracelens.live.store import SCROLLBACK_LINES

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument(
        "--scrollback", type=int, default=SCROLLBACK_LINES, help="lines the log index holds (as `follow`)"
    )
    args = parser.parse_args()
    env = {
        **os.environ,
        "TRACELENS_SOAK_SECONDS": str(args.minutes * 60),
        "TRACELENS_SOAK_SCROLLBACK": str(args.scrollback),
    }
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "tests/test_soak.py"],
        cwd=ROOT,
        env=env,
    )
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"wall {time.perf_counter() - started:.0f} s, CPU {usage.ru_utime + usage.ru_stime:.0f} s "
        f"(user {usage.ru_utime:.0f} s, system {usage.ru_stime:.0f} s)"
    )
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
