#!/usr/bin/env python3
"""Driving dot-launch from a Python host: one launch, its result, and what to do when it fails.

    host.py DOT_LAUNCH ROOT NAME CONSENT TARGET [KEY=VALUE ...]

CONSENT is the flag the entry's containment needs: --require-process-sandbox or
--allow-audit-plugin. Only documented commands and fields are used (docs/protocol.md for the
result, docs/errors.md for the error object and exit codes). Prints one line per fact, for people.
"""

import json
import subprocess
import sys

# docs/errors.md: the exit codes, the same for every tool.
REFUSED, USAGE, PLUGIN_FAILED, RETAINED, SYSTEM = 1, 2, 3, 4, 5


class LaunchError(Exception):
    """A launch that did not commit: the exit code and dot's error object."""

    def __init__(self, code, error):
        super().__init__(f"{error['error']}: {error['message']}")
        self.code = code
        self.error = error


def launch(dot_launch, root, name, consent, target, inputs):
    """Runs one plugin; returns the result object of a committed run (exit 0, or 4 with warnings)."""
    argv = [dot_launch, "--root", root, name, consent, "--target", target]
    for key, value in inputs.items():
        argv += ["--input", f"{key}={value}"]
    # --json: the error object even if this host's stderr is a terminal.
    done = subprocess.run(argv + ["--json"], capture_output=True, text=True, check=False)
    if done.returncode in (0, RETAINED) and done.stdout:
        return json.loads(done.stdout)
    raise LaunchError(done.returncode, json.loads(done.stderr))


def main(args):
    dot_launch, root, name, consent, target, *pairs = args
    inputs = dict(pair.split("=", 1) for pair in pairs)
    try:
        result = launch(dot_launch, root, name, consent, target, inputs)
    except LaunchError as e:
        print(f"refused: {e.error['error']} (exit {e.code})")
        if e.code == PLUGIN_FAILED:
            run = e.error["run"]  # the run's result, status "failed": how the plugin ended
            print(f"plugin ended: {json.dumps(run['exit'], sort_keys=True)}")
        elif "next_argv" in e.error:
            # One command that resolves it, runnable as is: show it, never run it unasked.
            print("next:", json.dumps(e.error["next_argv"]))
        return e.code
    print(f"status: {result['status']} (schema {result['schema']})")
    for output in result.get("outputs", []):
        print(f"output: {output['name']} {output['size']} bytes sha256:{output['sha256']}")
    if "enforced" in result:
        print(f"landlock: {result['enforced']['landlock_status']}")
    for warning in result.get("warnings", []):
        print(f"warning: {warning['kind']} (next: {warning.get('next', '-')})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
