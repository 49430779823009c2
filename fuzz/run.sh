#!/bin/sh
# Runs every fuzz target in turn for FUZZ_SECONDS each (default 600), niced.
#
#   fuzz/run.sh [TARGET...]        FUZZ_SECONDS=60 fuzz/run.sh journal
#
# Each target starts from its committed seeds (corpus/TARGET) plus its past crash inputs
# (regressions/TARGET), copied into a scratch corpus work/TARGET that libFuzzer may grow; crash
# inputs land in artifacts/TARGET/. work/ and artifacts/ are git-ignored: only the small seed
# corpora are committed. Exits nonzero at the first target that finds a crash.
set -eu
cd "$(dirname "$0")"
secs="${FUZZ_SECONDS:-600}"
targets="${*:-entry publisher journal response elf minisign}"
cargo +nightly fuzz build
for t in $targets; do
    mkdir -p "work/$t" "artifacts/$t"
    cp corpus/"$t"/* "work/$t/"
    if [ -d "regressions/$t" ]; then cp regressions/"$t"/* "work/$t/"; fi
    echo "== fuzz $t for ${secs}s"
    nice -n 19 cargo +nightly fuzz run "$t" "work/$t" -- \
        -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="artifacts/$t/"
done
