# Sourced by the stand-alone experiments' scripts (fanout.sh, worker.sh):
# the harness's directory and target directory, and `build_bin NAME`,
# which builds one of its binaries (release) and prints its path.
here="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"

build_bin() {
  (cd "$here" && cargo build --release --quiet --bin "$1")
  echo "$CARGO_TARGET_DIR/release/$1"
}
