#!/usr/bin/env bash
# bench/list-doctor.sh [BIN_DIR] [N]: wall time of `dot-register list` and `dot-verify doctor` over
# a DEV root of N process entries (default 1000) that share one store file (`hello`), with
# hyperfine on a warm cache; then the same with that store file tampered, checking every entry
# reports it. BIN_DIR defaults to the release build (`make build`). Not part of `make bench`.
set -euo pipefail
bin=${1:-target/$(rustc -vV | sed -n 's/^host: //p')/release}
n=${2:-1000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
"$bin/dot-register" init --dev --root "$root" >/dev/null
"$bin/dot-register" dev --root "$root" --name e0000 --exe "$bin/hello" --containment process \
  --input name:string:optional >/dev/null
# The other entries: the first one's file with its name changed (what `dev` writes, made faster).
for i in $(seq 1 $((n - 1))); do
  name=$(printf 'e%04d' "$i")
  sed "s/\"e0000\"/\"$name\"/" "$root/plugins.d/e0000.json" >"$root/plugins.d/$name.json"
  chmod 600 "$root/plugins.d/$name.json"
done
hyperfine -N -w 3 -r 20 "$bin/dot-register list --root $root" "$bin/dot-verify doctor --root $root"
store=$(ls "$root"/store/sha256/*)
chmod 700 "$store" && printf 'X' | dd of="$store" bs=1 seek=1000 conv=notrunc status=none
chmod 555 "$store"
bad=$("$bin/dot-register" list --root "$root" | grep -o '"error":"store-tampered"' | wc -l)
echo "tampered store file: $bad of $n entries report store-tampered"
[ "$bad" -eq "$n" ]
