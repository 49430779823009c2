#!/usr/bin/env bash
# make bench: build release, register hello in a temporary root, measure everything in one run,
# write BENCHMARKS.md. Installs hyperfine, bubblewrap, openssl, time and minisign when missing.
#
#   BENCH_RUNS   per-launch runs of each command (default 200)
#   BENCH_OUT    where the document goes (default BENCHMARKS.md)
#   BENCH_TMP    parent of the scratch directory (default /tmp; the commit benchmark measures its
#                file system)
set -euo pipefail
cd "$(dirname "$0")/.."

export DEBIAN_FRONTEND=noninteractive
need=()
command -v hyperfine >/dev/null 2>&1 || need+=(hyperfine)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v minisign >/dev/null 2>&1 || need+=(minisign)
[ -x /usr/bin/time ] || need+=(time)
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "bench: installing ${need[*]}" >&2
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

RUNS=${BENCH_RUNS:-200}
OUTDOC=${BENCH_OUT:-BENCHMARKS.md}
TARGET=$(rustc -vV | sed -n 's/^host: //p')
REL=$PWD/target/$TARGET/release
RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --target "$TARGET" --workspace --bins

W=$(mktemp -d "${BENCH_TMP:-/tmp}/dot-bench.XXXXXX")
# The same two launches with their root and target in memory (a tmpfs, when /dev/shm is one): what
# the scratch file system adds to a launch (the audit log's sync, the run directory, its journal and
# stage made and removed; none of it reaches a disk on a tmpfs). Shown beside the targets, never
# instead of them.
MEM=
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
  MEM=$(mktemp -d /dev/shm/dot-bench.XXXXXX)
fi
trap 'rm -rf "$W" ${MEM:+"$MEM"}' EXIT
R=$W/results
mkdir -p "$R" "$W/stage/out" "$W/target"
B=$REL/dot-bench
HELLO=$REL/hello
say() { printf 'bench: %s\n' "$*" >&2; }

printf 'Run started %s (UTC), load average %s.\n' "$(date -u '+%Y-%m-%d %H:%M')" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" >"$R/started.txt"

# The scratch directory's file system, as the launches' roots and targets see it.
findmnt -no SOURCE,FSTYPE,OPTIONS -T "$W" >"$R/scratch-fs.txt" || :

# A development root with hello at both containment levels (and one in memory, above).
for at in "$W" ${MEM:+"$MEM"}; do
  "$REL/dot-register" init --root "$at/root" --dev >/dev/null
  for c in audit process; do
    "$REL/dot-register" dev --root "$at/root" --name "hello-$c" --exe "$HELLO" --containment "$c" \
      --input name:string:optional --input write:string:optional >/dev/null
  done
done
[ -z "$MEM" ] || mkdir -p "$MEM/target"
stat -c %s "$HELLO" >"$R/hello-size.txt"
# The Python example under process, with /usr as its runtime.
PY=$PWD/examples/python/greet.py
"$REL/dot-register" dev --root "$W/root" --name python-process --exe "$PY" --containment process \
  --runtime /usr --input name:string:optional >/dev/null
LAUNCH_PYTHON=("$REL/dot-launch" --root "$W/root" python-process --require-process-sandbox --target "$W/target-py")
mkdir -p "$W/target-py" "$W/stage-py/out"
REQ=$W/request.json
printf '{"protocol":"1.0","plugin":"hello","inputs":{"write":"no"}}\n' >"$REQ"
# The two hello launches, each with a root and a target: those in $W, or those in $MEM.
AUDIT_ARGS=(hello-audit --allow-audit-plugin --input write=no)
PROCESS_ARGS=(hello-process --require-process-sandbox --input write=no)
LAUNCH_AUDIT=("$REL/dot-launch" --root "$W/root" "${AUDIT_ARGS[@]}" --target "$W/target")
LAUNCH_PROCESS=("$REL/dot-launch" --root "$W/root" "${PROCESS_ARGS[@]}" --target "$W/target")

json_argv() { local a out=""; for a in "$@"; do out+="${out:+,}\"$a\""; done; printf '[%s]' "$out"; }
# pair_spec FILE NAME1 "COMMAND1" NAME2 "COMMAND2": a wall spec of two commands (split on spaces).
pair_spec() {
  # shellcheck disable=SC2086
  printf '[{"name":"%s","argv":%s},\n{"name":"%s","argv":%s}]\n' \
    "$2" "$(json_argv $3)" "$4" "$(json_argv $5)" >"$1"
}
# What one process start costs here, without the program: an empty static C program (glibc's
# start-up, as every dot tool, the runner and hello have it) against one with no libc at all.
printf 'int main(void) { return 0; }\n' >"$W/start.c"
printf 'void _start(void) { __asm__ volatile("mov $60, %%eax; xor %%edi, %%edi; syscall"); }\n' >"$W/raw.c"
gcc -O2 -static -o "$W/start-static" "$W/start.c"
gcc -O2 -static -nostdlib -o "$W/start-raw" "$W/raw.c"
{
  printf '[\n'
  printf '{"name":"hello","argv":%s,"stdin":"%s","cwd":"%s"},\n' "$(json_argv "$HELLO")" "$REQ" "$W/stage"
  printf '{"name":"start-static","argv":%s},\n' "$(json_argv "$W/start-static")"
  printf '{"name":"start-raw","argv":%s},\n' "$(json_argv "$W/start-raw")"
  printf '{"name":"launch-audit","argv":%s},\n' "$(json_argv "${LAUNCH_AUDIT[@]}")"
  printf '{"name":"launch-process","argv":%s},\n' "$(json_argv "${LAUNCH_PROCESS[@]}")"
  if [ -n "$MEM" ]; then
    printf '{"name":"launch-audit-tmpfs","argv":%s},\n' \
      "$(json_argv "$REL/dot-launch" --root "$MEM/root" "${AUDIT_ARGS[@]}" --target "$MEM/target")"
    printf '{"name":"launch-process-tmpfs","argv":%s},\n' \
      "$(json_argv "$REL/dot-launch" --root "$MEM/root" "${PROCESS_ARGS[@]}" --target "$MEM/target")"
  fi
  printf '{"name":"digest-hello","argv":%s},\n' "$(json_argv "$REL/dot-verify" digest "$HELLO")"
  printf '{"name":"python","argv":%s,"stdin":"%s","cwd":"%s"},\n' "$(json_argv "$PY")" "$REQ" "$W/stage-py"
  printf '{"name":"launch-python-process","argv":%s}' "$(json_argv "${LAUNCH_PYTHON[@]}")"
  if command -v bwrap >/dev/null 2>&1 && bwrap --ro-bind / / --unshare-all true >/dev/null 2>&1; then
    printf ',\n{"name":"bwrap-minimal","argv":%s,"stdin":"%s","cwd":"%s"}' \
      "$(json_argv bwrap --ro-bind / / "$HELLO")" "$REQ" "$W/stage"
    printf ',\n{"name":"bwrap-full","argv":%s,"stdin":"%s","cwd":"%s"}' \
      "$(json_argv bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent "$HELLO")" \
      "$REQ" "$W/stage"
    printf ',\n{"name":"bwrap-python","argv":%s,"stdin":"%s","cwd":"%s"}' \
      "$(json_argv bwrap --ro-bind / / --bind "$W/stage-py" "$W/stage-py" --dev /dev --proc /proc --unshare-all --die-with-parent "$PY")" \
      "$REQ" "$W/stage-py"
  fi
  printf '\n]\n'
} >"$W/wall-spec.json"

say "per-launch wall time ($RUNS runs each)"
"$B" wall --spec "$W/wall-spec.json" --runs "$RUNS" --warmup 10 >"$R/wall.json"
say "runner timings"
"$B" timings --runs "$RUNS" -- "${LAUNCH_PROCESS[@]}" >"$R/timings.json"

say "peak RSS"
/usr/bin/time -v -o "$R/rss-hello.txt" sh -c 'cd "$1" && exec "$2" <"$3" >/dev/null' sh "$W/stage" "$HELLO" "$REQ"
/usr/bin/time -v -o "$R/rss-launch-audit.txt" "${LAUNCH_AUDIT[@]}" >/dev/null
/usr/bin/time -v -o "$R/rss-launch-process.txt" "${LAUNCH_PROCESS[@]}" >/dev/null

say "digest"
for mib in 8 64 512; do
  f=$W/data-$mib
  head -c "$((mib << 20))" /dev/urandom >"$f"
  # Written back before it is timed: a digest must not share the disk with the file's own writeback.
  sync
  runs=$((mib == 512 ? 5 : mib == 64 ? 15 : 40))
  pair_spec "$W/digest-spec.json" dot "$REL/dot-verify digest $f" openssl "openssl dgst -sha256 $f"
  "$B" wall --spec "$W/digest-spec.json" --runs "$runs" --warmup 2 >"$R/digest-$mib.json"
  rm -f "$f"
  sync
done

say "entry verification"
S=$W/sroot
"$REL/dot-register" init --root "$S" >/dev/null
minisign -G -W -f -p "$W/pub.key" -s "$W/sec.key" >/dev/null
"$REL/dot-register" publisher add --root "$S" --id bench --pubkey "$W/pub.key" >/dev/null
BIG=$W/big-exe
{ cat "$HELLO"; head -c "$(((8 << 20) - $(stat -c %s "$HELLO")))" /dev/zero; } >"$BIG"
chmod 0755 "$BIG"
cat >"$W/big.json" <<EOF
{
  "schema": 1,
  "name": "big",
  "version": "1.0.0",
  "trust": "signed",
  "publisher": "bench",
  "sha256": "$(sha256sum "$BIG" | cut -d' ' -f1)",
  "size": $(stat -c %s "$BIG"),
  "protocol": ">=1.0, <2",
  "inputs": [],
  "containment": "audit"
}
EOF
minisign -S -s "$W/sec.key" -m "$W/big.json" -x "$W/big.json.minisig" >/dev/null
"$REL/dot-register" add --root "$S" --entry "$W/big.json" --signature "$W/big.json.minisig" --exe "$BIG" >/dev/null
PINNED=$S/store/sha256/$(sha256sum "$BIG" | cut -d' ' -f1)
pair_spec "$W/entry-spec.json" entry "$REL/dot-verify entry --root $S big" digest "$REL/dot-verify digest $PINNED"
"$B" wall --spec "$W/entry-spec.json" --runs 50 --warmup 5 >"$R/entry.json"

say "launch cost by plugin size"
# hello padded with zeros after its end (still the same ELF: nothing maps the padding) to 2, 16 and
# 64 MiB (hello itself is over 1 MiB), registered at process; each launch digests the whole copy.
: >"$W/size-spec.json.tmp"
for mib in 2 16 64; do
  big=$W/hello-$mib
  pad=$(((mib << 20) - $(stat -c %s "$HELLO")))
  [ "$pad" -ge 0 ] || { echo "bench: hello is over $mib MiB" >&2; exit 1; }
  { cat "$HELLO"; head -c "$pad" /dev/zero; } >"$big"
  chmod 0755 "$big"
  "$REL/dot-register" dev --root "$W/root" --name "hello-$mib" --exe "$big" --containment process \
    --input name:string:optional --input write:string:optional >/dev/null
  printf '%s{"name":"launch-%s","argv":%s},\n{"name":"digest-%s","argv":%s}' \
    "$([ "$mib" = 2 ] || echo ',')" "$mib" \
    "$(json_argv "$REL/dot-launch" --root "$W/root" "hello-$mib" --require-process-sandbox --input write=no --target "$W/target")" \
    "$mib" "$(json_argv "$REL/dot-verify" digest "$W/root/store/sha256/$(sha256sum "$big" | cut -d' ' -f1)")" \
    >>"$W/size-spec.json.tmp"
done
{ printf '[\n'; cat "$W/size-spec.json.tmp"; printf '\n]\n'; } >"$W/size-spec.json"
"$B" wall --spec "$W/size-spec.json" --runs 30 --warmup 3 >"$R/size.json"

say "a registry of 1,000 entries sharing one store file"
M=$W/many
"$REL/dot-register" init --root "$M" --dev >/dev/null
"$REL/dot-register" dev --root "$M" --name e0 --exe "$HELLO" --containment audit >/dev/null
for i in $(seq 1 999); do
  sed "s/\"name\": \"e0\"/\"name\": \"e$i\"/" "$M/plugins.d/e0.json" >"$M/plugins.d/e$i.json"
done
chmod 0600 "$M"/plugins.d/*.json
"$REL/dot-register" list --root "$M" | grep -o '"valid":true' | wc -l >"$R/many-valid.txt"
pair_spec "$W/many-spec.json" list "$REL/dot-register list --root $M" doctor "$REL/dot-verify doctor --root $M"
"$B" wall --spec "$W/many-spec.json" --runs 20 --warmup 2 >"$R/many.json"

say "hyperfine cross-check of the launches (each command's runs back to back, not interleaved)"
hyperfine -N --style none -w 10 -r "$RUNS" --export-json "$R/launch-hyperfine.json" \
  "${LAUNCH_AUDIT[*]}" "${LAUNCH_PROCESS[*]}" >/dev/null

say "commit"
# Nothing of the earlier steps left to write back while the commits are timed. (The unsynced
# floor still varies from run to run on a disk mounted with `discard`: 1,000 outputs' floor was
# 108 ms against 31 ms durable in one run; this sync did not make it steady.)
sync
for n in 1 8 9 100 1000; do
  runs=$((n == 1000 ? 10 : 30))
  "$B" commit --dir "$W/commit-$n" --files "$n" --size 4096 --runs "$runs" >"$R/commit-$n.json"
  rm -rf "$W/commit-$n"
  sync
done

say "reap"
for n in 1 30 1000; do
  runs=$((n == 1000 ? 10 : 100))
  "$B" reap --members "$n" --runs "$runs" >"$R/reap-$n.json"
done

printf 'Load average at the end %s.\n' "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$R/started.txt"
"$B" report --dir "$R" >"$OUTDOC"
if [ -n "${BENCH_KEEP:-}" ]; then
  rm -rf "$BENCH_KEEP" && cp -r "$R" "$BENCH_KEEP"
fi
say "wrote $OUTDOC"
