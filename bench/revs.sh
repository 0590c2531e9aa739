#!/usr/bin/env bash
# bench/revs.sh OLD NEW [COUNT]: run the scrape and poll Go benchmarks of
# two revisions of this repository in one sitting, alternating between
# them COUNT times (default 6), and compare them with benchstat.
#
# Each revision is checked out into a temporary git worktree, so the
# working tree is not touched. A benchmark is looked up in the first of its
# candidate packages that exists in the revision, because the collectors
# moved from collector/ into collector/<source>/ (architecture issue).
# Results go to $OUT (default: a temporary directory, printed at the end).
set -euo pipefail

old=${1:?usage: bench/revs.sh OLD NEW [COUNT]}
new=${2:?usage: bench/revs.sh OLD NEW [COUNT]}
count=${3:-6}
benchstat_version=v0.0.0-20260908200009-22c9c6c9d4da

top=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
out=${OUT:-$work/results}
mkdir -p "$out"
cleanup() {
  git -C "$top" worktree remove --force "$work/old" 2>/dev/null || true
  git -C "$top" worktree remove --force "$work/new" 2>/dev/null || true
}
trap cleanup EXIT
git -C "$top" worktree add -q --detach "$work/old" "$old"
git -C "$top" worktree add -q --detach "$work/new" "$new"

# name;benchmark regexp;benchtime;candidate packages (first that exists)
benchmarks=(
  "scrape;^Benchmark(Scrape|ConcurrentScrapes)$;2s;./collector/scrape/"
  "exposition;.;1s;./collector/exposition/"
  "netdev;^BenchmarkNetdevPoll$;1s;./collector/netdev/ ./collector/"
  "infiniband;^BenchmarkInfiniBandPoll$;1s;./collector/infiniband/ ./collector/"
  "ethtool;^BenchmarkEthtoolPoll$;1s;./collector/ethtool/ ./collector/"
  "devlink;^BenchmarkDevlink;1s;./collector/devlinkhealth/ ./collector/"
  "kmsg;^BenchmarkKmsgRecord$;1s;./collector/kmsg/ ./collector/"
  "logrules;^BenchmarkMatch;1s;./internal/logrules/ ./collector/logrules/"
  "vmastats;^Benchmark(Parse|Load)$;1s;./vmastats/"
  "largehost;^Benchmark(LargeHost|ScrapeSeries);1s;./bench/scalehost/"
)

pkg_in() { # pkg_in DIR CANDIDATES...: the first candidate package with Go files in DIR
  local dir=$1; shift
  for p in "$@"; do
    if compgen -G "$dir/${p#./}*_test.go" >/dev/null; then
      echo "$p"
      return
    fi
  done
}

for ((i = 1; i <= count; i++)); do
  for side in old new; do
    for b in "${benchmarks[@]}"; do
      IFS=';' read -r name re btime cands <<<"$b"
      # shellcheck disable=SC2086
      pkg=$(pkg_in "$work/$side" $cands)
      [ -n "$pkg" ] || { echo "no package for $name in $side" >&2; exit 1; }
      (cd "$work/$side" && go test -run '^$' -bench "$re" -benchmem -benchtime "$btime" -count 1 "$pkg") \
        | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >>"$out/$side-$name.txt"
    done
  done
  echo "round $i of $count done" >&2
done

# Package paths differ between revisions; benchstat compares by name, so
# drop the pkg: lines and give each benchmark one file per side.
for side in old new; do
  for b in "${benchmarks[@]}"; do
    name=${b%%;*}
    grep -v '^pkg:' "$out/$side-$name.txt" >>"$out/$side.txt"
  done
done
go run "golang.org/x/perf/cmd/benchstat@$benchstat_version" "old=$out/old.txt" "new=$out/new.txt" | tee "$out/benchstat.txt"
echo "results in $out" >&2
