#!/usr/bin/python3 -I
# A dot plugin in Python. Under `process` it runs with a declared runtime (--runtime /usr: the
# interpreter and its libraries come from there, read-only, not pinned by the entry's digest); at
# `audit` (no OS boundary) it is registered with --allow-dynamic. The environment is empty and
# there is no PATH, so the #! line names the interpreter by its absolute path (not /usr/bin/env).
import json
import sys

request = json.load(sys.stdin)
name = request["inputs"].get("name", "world")
with open("out/greeting.txt", "w") as out:
    out.write(f"hello, {name}, from Python\n")
print(json.dumps({"protocol": "1.0", "status": "ok", "outputs": ["greeting.txt"]}))
