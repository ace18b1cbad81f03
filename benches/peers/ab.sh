#!/usr/bin/env bash
# Before/after comparison of logbus itself, for a change to the caller's
# path: builds the peer harness at BASE (a git revision) and at the working
# tree (both with the working tree's harness, where it builds against the
# base), then runs logbus (drop-oldest and Block) and the two floors from each
# build in alternating rounds (A B, then B A, ...), each run its own process,
# and prints one table per side (report.py's format), each with its host-state line.
# Each figure is the median of that side's runs in the host's fast state
# (`xcore_ns` under 250 ns; report.py's FAST_ONLY): the host's slow state
# moves every figure that passes lines between cores, so a side that drew
# more slow runs would read slower for that alone. FAST_ONLY=0 takes every
# run.
#
#   benches/peers/ab.sh BASE [ROUNDS] [RECORDS]     (defaults: 5, 1000000)
#
# Needs cargo, git and python3. The base is checked out in a temporary git
# worktree; both builds share one target directory, so only logbus is
# rebuilt for the second.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
base="${1:?usage: ab.sh BASE [ROUNDS] [RECORDS]}"
rounds="${2:-5}"
records="${3:-1000000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
export TZ=UTC

work="$(mktemp -d)"
tree="$work/base"
cleanup() {
  git -C "$here" worktree remove --force "$tree" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
git -C "$here" worktree add --detach "$tree" "$base" >/dev/null

build() { # build DIR OUT: the harness of the checkout at DIR, copied to OUT
  # No stale binary can stand in for a build that failed.
  rm -f "$CARGO_TARGET_DIR/release/logbus-peers"
  (cd "$1/benches/peers" && cargo build --release --quiet --bin logbus-peers) || return 1
  cp "$CARGO_TARGET_DIR/release/logbus-peers" "$2"
}
# Both sides run this checkout's harness, so that only logbus differs (the
# harness's own timing, allocation counting and adapters too); a base whose
# API the harness does not build against falls back to its own harness.
rm -rf "$tree/benches/peers/src"
cp -r "$here/src" "$here/Cargo.toml" "$here/Cargo.lock" "$tree/benches/peers/"
# The counting allocator the harness includes by path.
mkdir -p "$tree/tests/common"
cp "$here/../../tests/common/counting.rs" "$tree/tests/common/"
if ! build "$tree" "$work/A" 2>"$work/build-A.txt"; then
  echo "the working tree's harness does not build against $base; using the base's own" >&2
  git -C "$tree" checkout -- benches/peers
  build "$tree" "$work/A" || { echo "the base's harness does not build either" >&2; exit 1; }
fi
build "$here/../.." "$work/B" || { echo "the working tree's harness does not build" >&2; exit 1; }

# LOGGERS overrides the list (a logger the base lacks is reported FAILED and skipped).
read -r -a loggers <<<"${LOGGERS:-floor-format floor-bufwriter logbus logbus-block}"
for round in $(seq 1 "$rounds"); do
  if ((round % 2 == 0)); then sides=(B A); else sides=(A B); fi
  for side in "${sides[@]}"; do
    for threads in 1 4; do
      for logger in "${loggers[@]}"; do
        out="$work/out-$side-$logger-$threads-$round"
        line="$("$work/$side" --logger "$logger" --threads "$threads" --records "$records" --out "$out" 2>/dev/null | grep '^RESULT')" || {
          echo "FAILED: $side $logger threads=$threads round=$round" >&2
          continue
        }
        echo "round=$round $line" >>"$work/raw-$side"
        rm -rf "$out"
      done
    done
  done
  echo "round $round of $rounds done" >&2
done

for side in A B; do
  name=$([ "$side" = A ] && echo "before ($base)" || echo "after (working tree)")
  echo
  echo "## $name"
  # With the host's state: its slow runs (`xcore_ns`) move every figure
  # that passes lines between cores, the peers' as much as logbus's, so
  # they are left out (`paired.py --fast-below` compares the fast state's
  # pairs only).
  FAST_ONLY="${FAST_ONLY:-1}" python3 "$here/report.py" "$work/raw-$side" "$work/report-$side.md" "$rounds" "$records" |
    grep -E '^\||^- Host state'
done
