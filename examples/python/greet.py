#!/usr/bin/python3 -I
# A dot plugin in Python. Scripts run only at `audit` (no OS boundary), registered with
# --allow-dynamic: the interpreter and its libraries are not pinned by the entry's digest. The
# environment is empty, so the #! line names the interpreter by its absolute path.
import json
import sys

request = json.load(sys.stdin)
name = request["inputs"].get("name", "world")
with open("out/greeting.txt", "w") as out:
    out.write(f"hello, {name}, from Python\n")
print(json.dumps({"protocol": "1.0", "status": "ok", "outputs": ["greeting.txt"]}))
