#!/usr/bin/env bash
# Runs cargo-fuzz targets of this crate one after the other, each for SECONDS (default 20),
# starting from its committed seeds (fuzz/seeds/<target>) and its local corpus
# (fuzz/corpus/<target>, kept between runs, not committed). Prints one line per target:
# inputs tried, seconds, and the result. Stops at the first finding (libFuzzer writes the
# input to fuzz/artifacts/<target>/). Needs `cargo +nightly` and cargo-fuzz.
#
#   fuzz/run.sh [SECONDS] [TARGET...]     (no TARGET: every target but template_differential)
#
# KCP_FUZZ_FLAGS adds cargo-fuzz build options: CI uses "--dev --sanitizer none" (a debug
# build without AddressSanitizer compiles in a fraction of the time; the code is safe Rust, so
# the sanitizer mostly guards dependencies). The 10-minute runs use the default (release, ASan).
set -euo pipefail
cd "$(dirname "$0")"

seconds=${1:-20}
shift || true
if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo +nightly fuzz list | grep -vx template_differential)
fi

read -r -a flags <<<"${KCP_FUZZ_FLAGS:-}"
cargo +nightly fuzz build "${flags[@]}"
for target in "${targets[@]}"; do
  mkdir -p "corpus/$target"
  seeds=()
  if [ -d "seeds/$target" ]; then seeds=("seeds/$target"); fi
  log="$(mktemp)"
  started=$(date +%s)
  # -timeout: an input running longer than 10 s is a hang; -rss_limit_mb: 2 GiB is a leak.
  if ! cargo +nightly fuzz run "${flags[@]}" "$target" "corpus/$target" "${seeds[@]}" -- \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "== fuzz $target: FINDING after $(( $(date +%s) - started )) s (input in fuzz/artifacts/$target/)" >&2
    rm -f "$log"
    exit 1
  fi
  runs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
  edges=$(sed -n 's/^stat::.*//; s/.* cov: \([0-9]*\) .*/\1/p' "$log" | tail -n 1)
  peak=$(sed -n 's/^stat::peak_rss_mb: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
  echo "== fuzz $target: ${runs:-?} inputs in $(( $(date +%s) - started )) s, coverage ${edges:-?} edges, peak RSS ${peak:-?} MiB, no finding"
  rm -f "$log"
done
