#!/usr/bin/env bash
# bench/run.sh -- goldset's peer-sizes suite side by side with the NumPy peer
# (shared/peers/numpy_gen.py) and with dd writing the same number of bytes
# (O_DIRECT, then fdatasync).
#
#   bench/run.sh                         all five peer-sizes cases, 2 reps each
#   bench/run.sh --reps 3 --cases paged-attention-100x8k,quest-100x8k-k16
#   bench/run.sh --full                  also: `goldset gen` of every suite vs dd (~35 GB)
#   bench/run.sh --go                    also: Go benchmarks -> bench/out/gobench.txt
#
# Options:
#   --reps N        repetitions per tool and case (default 2; at least 1)
#   --cases LIST    comma-separated peer-sizes case ids or peer op names;
#                   "none" runs no case (e.g. with --go alone)
#   --scratch DIR   where outputs are written and removed (default bench/out/scratch)
#   --settle SEC    idle seconds before every timed command (default 10; 0 for none)
#   --no-peer       skip the NumPy peer        --no-dd   skip the dd reference
#   --full          time the whole default build (`goldset gen`, all suites) vs dd
#   --go            run `go test -bench` on npy gen golden compare diff longbench/...
#   --peer PATH     the peer script (default ../shared/peers/numpy_gen.py beside the repo, or $PEER)
#
# Each repetition runs goldset, then the peer, then dd (alternating, so slow
# drifts in machine load hit all of them), each under /usr/bin/time -v. After
# every command a timed `sync` flushes what the command left dirty (goldset and
# dd fsync their output, the peer by default does not), so no run pays for the
# previous one's write-back; the sync time is recorded as sync_after_s. Then
# the output is deleted and the machine idles --settle seconds before the next
# command starts: on this VM the host keeps absorbing a run's bytes for
# seconds after the guest's fsync and sync return (invisible to the guest),
# and a run started at once pays for its predecessor's writes (measured: the
# reshape_and_cache case took 5.6-6.9 s right after dd wrote 4.3 GB, 4.3-5.7 s
# after a 10 s pause; every tool gets the same pause). The
# table shows the ratio of walls and, as "incl. sync", of wall + sync_after_s:
# the time until the bytes are on the device, which goldset's wall already
# includes and the peer's does not. Outputs are deleted right after being
# measured.
#
# The summary adds a total row: the sums of the per-case medians (issue 29's
# target is the peer taking at least 8x as long as goldset in total).
#
# Results: bench/out/results.json, bench/out/results.md, bench/out/runs.jsonl
# (one line per run), logs in bench/out/logs/. The machine is small and shared:
# read the ratios and medians, next to the recorded load averages.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out

REPS=2
CASES=matmul-4096,softmax-8192,reshape-and-cache-4096,paged-attention-100x8k,quest-100x8k-k16
SCRATCH=$OUT/scratch
PEER=${PEER:-$(cd "$(dirname "$0")/../.." && pwd)/shared/peers/numpy_gen.py}
PY=/usr/bin/python3
DO_PEER=1 DO_DD=1 FULL=0 GOBENCH=0 SETTLE=10

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-0}"; }
while (($#)); do
	case $1 in
	--reps) REPS=$2; shift ;;
	--cases) CASES=$2; shift ;;
	--scratch) SCRATCH=$2; shift ;;
	--settle) SETTLE=$2; shift ;;
	--peer) PEER=$2; shift ;;
	--no-peer) DO_PEER=0 ;;
	--no-dd) DO_DD=0 ;;
	--full) FULL=1 ;;
	--go) GOBENCH=1 ;;
	-h | --help) usage 0 ;;
	*) echo "run.sh: unknown argument $1" >&2; usage 2 >&2 ;;
	esac
	shift
done
[[ $REPS =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --reps wants a positive integer" >&2; exit 2; }
[[ $SETTLE =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "run.sh: --settle wants seconds (a non-negative number)" >&2; exit 2; }

log() { printf '== %s\n' "$*" >&2; }

# peer-sizes case id <-> peer op
peer_op() {
	case $1 in
	matmul-4096) echo matmul ;;
	softmax-8192) echo softmax ;;
	reshape-and-cache-4096) echo reshape_and_cache ;;
	paged-attention-100x8k) echo paged_attention ;;
	quest-100x8k-k16) echo quest ;;
	*) return 1 ;;
	esac
}
case_id() {
	case $1 in
	matmul) echo matmul-4096 ;;
	softmax) echo softmax-8192 ;;
	reshape_and_cache) echo reshape-and-cache-4096 ;;
	paged_attention) echo paged-attention-100x8k ;;
	quest) echo quest-100x8k-k16 ;;
	*) peer_op "$1" >/dev/null && echo "$1" ;;
	esac
}

apt_install() {
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		echo "run.sh: missing Debian packages $*; install them (apt-get install $*)" >&2
		exit 1
	fi
	log "apt-get install $*"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1 ||
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; }
}

# ---- tools ----
[ -x /usr/bin/time ] || apt_install time
[ -x $PY ] || apt_install python3
if ((DO_PEER)); then
	pkgs=()
	$PY -c 'import numpy' 2>/dev/null || pkgs+=(python3-numpy)
	# without OpenBLAS numpy falls back to the reference BLAS, which is not what
	# a NumPy user would run
	dpkg -s libopenblas0-pthread >/dev/null 2>&1 || pkgs+=(libopenblas0-pthread)
	((${#pkgs[@]} == 0)) || apt_install "${pkgs[@]}"
	[ -f "$PEER" ] || { echo "run.sh: peer script $PEER not found" >&2; exit 1; }
fi

mkdir -p "$OUT/logs"
log "go build -o bench/out/goldset ./cmd/goldset"
go build -o "$OUT/goldset" ./cmd/goldset
GS=$OUT/goldset

SCRATCH=$(mkdir -p "$SCRATCH" && cd "$SCRATCH" && pwd)
cleanup() { rm -rf "$SCRATCH"/run-*; rmdir "$SCRATCH" 2>/dev/null || true; }
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

[ "$CASES" = none ] && CASES=
RUNS=$OUT/runs.jsonl
if [ -n "$CASES" ] || ((FULL)); then : >"$RUNS"; fi
now() { date +%s.%N; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
cpu_pressure() { sed -n 's/^some avg10=\([0-9.]*\) avg60=\([0-9.]*\).*/\2/p' /proc/pressure/cpu 2>/dev/null || true; }

# measure TOOL CASE REP OUTDIR CMD...: run CMD under /usr/bin/time -v, time a
# sync, du the output, delete it and append one JSON line to runs.jsonl.
measure() {
	local tool=$1 cid=$2 rep=$3 dir=$4
	shift 4
	local tag=$cid.$tool.$rep tv=$OUT/logs/$cid.$tool.$rep.time
	rm -rf "$dir"
	sleep "$SETTLE"
	local la0 t0 t1 t2 rc=0
	la0=$(loadavg)
	log "$tag: $*"
	t0=$(now)
	/usr/bin/time -v -o "$tv" "$@" >"$OUT/logs/$tag.log" 2>&1 || rc=$?
	t1=$(now)
	sync
	t2=$(now)
	local bytes=0
	[ -e "$dir" ] && bytes=$(du -sb "$dir" | cut -f1)
	rm -rf "$dir"
	local rss user sys cpu
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tv")
	user=$(sed -n 's/.*User time (seconds): //p' "$tv")
	sys=$(sed -n 's/.*System time (seconds): //p' "$tv")
	cpu=$(sed -n 's/.*Percent of CPU this job got: \([0-9]*\)%.*/\1/p' "$tv")
	local peerj=null
	if [ "$tool" = peer ]; then
		peerj=$(grep -h '^{"op"' "$OUT/logs/$tag.log" | tail -1 || true)
		[ -n "$peerj" ] || peerj=null
	fi
	printf '{"case":"%s","tool":"%s","rep":%d,"rc":%d,"wall_s":%.3f,"sync_after_s":%.3f,"max_rss_kb":%s,"user_s":%s,"sys_s":%s,"cpu_pct":%s,"bytes":%s,"load_before":"%s","load_after":"%s","cpu_pressure60":"%s","peer_report":%s}\n' \
		"$cid" "$tool" "$rep" "$rc" "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" \
		"${rss:-0}" "${user:-0}" "${sys:-0}" "${cpu:-0}" "$bytes" "$la0" "$(loadavg)" "$(cpu_pressure)" "$peerj" >>"$RUNS"
	log "$tag: rc=$rc wall=$(echo "$t1 - $t0" | bc)s sync=$(echo "$t2 - $t1" | bc)s rss=${rss}kB bytes=$bytes load=$(loadavg)"
	if ((rc != 0)); then
		log "$tag FAILED (rc $rc); log tail:"
		tail -5 "$OUT/logs/$tag.log" >&2 || true
	fi
}

# dd_bytes TAG CASE REP BYTES: dd the same number of bytes (rounded up to 4 MiB)
# with O_DIRECT and a final fdatasync: the device's own write speed. Buffered dd
# measures the page cache's state on this VM instead: 4.3 GB took 3.2-3.8 s
# right after the peer had freed its page cache, 10.8-13.8 s after the idle
# pause (the host takes freed pages back, and faulting them in again costs
# 8-9 s of system time).
dd_bytes() {
	local cid=$1 rep=$2 bytes=$3
	((bytes > 0)) || return 0
	local n=$(((bytes + 4194303) / 4194304))
	measure dd "$cid" "$rep" "$SCRATCH/run-dd" \
		bash -c 'mkdir -p "$1" && exec dd if=/dev/zero of="$1/dd.bin" bs=4M count="$2" oflag=direct conv=fdatasync status=none' _ "$SCRATCH/run-dd" "$n"
}

last_bytes() { # bytes of the last successful run of TOOL for CASE
	$PY - "$RUNS" "$1" "$2" <<'EOF'
import json, sys
b = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["case"] == sys.argv[3] and r["tool"] == sys.argv[2] and r["rc"] == 0:
        b = r["bytes"]
print(b)
EOF
}

START_LOAD=$(loadavg)
log "load average at start: $START_LOAD ($(nproc) CPUs)"

IFS=, read -ra want <<<"$CASES"
for c in "${want[@]}"; do
	cid=$(case_id "$c") || { echo "run.sh: unknown case $c" >&2; exit 2; }
	op=$(peer_op "$cid")
	for ((r = 1; r <= REPS; r++)); do
		measure goldset "$cid" "$r" "$SCRATCH/run-goldset" \
			"$GS" gen peer-sizes --case "$cid" --out "$SCRATCH/run-goldset" --quiet
		if ((DO_PEER)); then
			measure peer "$cid" "$r" "$SCRATCH/run-peer" \
				$PY "$PEER" "$op" --out "$SCRATCH/run-peer"
		fi
		if ((DO_DD)); then
			dd_bytes "$cid" "$r" "$(last_bytes goldset "$cid")"
		fi
	done
done

if ((FULL)); then
	log "--full: goldset gen (every suite, default splits)"
	measure goldset "full-default-build" 1 "$SCRATCH/run-full" "$GS" gen --out "$SCRATCH/run-full" --quiet
	if ((DO_DD)); then
		dd_bytes "full-default-build" 1 "$(last_bytes goldset full-default-build)"
	fi
fi

END_LOAD=$(loadavg)
log "load average at end: $END_LOAD"

# ---- summary (skipped when nothing ran: keeps the previous results) ----
[ -n "$CASES" ] || ((FULL)) || RUNS=/dev/null
[ "$RUNS" = /dev/null ] || $PY - "$RUNS" "$OUT" "$START_LOAD" "$END_LOAD" "$(nproc)" "$REPS" "$SETTLE" <<'EOF'
import json, os, statistics, sys, datetime, platform
runs_path, out, load0, load1, ncpu, reps, settle = sys.argv[1:8]
runs = [json.loads(l) for l in open(runs_path)]
targets = {"reshape-and-cache-4096", "paged-attention-100x8k", "quest-100x8k-k16"}

def med(xs):
    return statistics.median(xs) if xs else None

def div(a, b):
    return a / b if a is not None and b else None

rows = []
order = []
for r in runs:
    if r["case"] not in order:
        order.append(r["case"])
for cid in order:
    by = {}
    for t in ("goldset", "peer", "dd"):
        ok = [r for r in runs if r["case"] == cid and r["tool"] == t and r["rc"] == 0]
        bad = [r for r in runs if r["case"] == cid and r["tool"] == t and r["rc"] != 0]
        by[t] = {
            "runs": len(ok), "failed": len(bad),
            "wall_s": med([r["wall_s"] for r in ok]),
            "walls_s": [r["wall_s"] for r in ok],
            "wall_plus_sync_s": med([r["wall_s"] + r["sync_after_s"] for r in ok]),
            "max_rss_mib": med([r["max_rss_kb"] / 1024 for r in ok]),
            "user_s": med([float(r["user_s"]) for r in ok]),
            "sys_s": med([float(r["sys_s"]) for r in ok]),
            "bytes": max([r["bytes"] for r in ok], default=None),
            "load_before": [r["load_before"] for r in ok + bad],
        }
    g, p, d = by["goldset"], by["peer"], by["dd"]
    row = {
        "case": cid,
        "goldset_wall_s": g["wall_s"], "peer_wall_s": p["wall_s"],
        "speedup_peer_over_goldset": div(p["wall_s"], g["wall_s"]),
        "speedup_incl_sync": div(p["wall_plus_sync_s"], g["wall_plus_sync_s"]),
        "goldset_rss_mib": g["max_rss_mib"], "peer_rss_mib": p["max_rss_mib"],
        "rss_ratio_peer_over_goldset": div(p["max_rss_mib"], g["max_rss_mib"]),
        "goldset_bytes": g["bytes"], "peer_bytes": p["bytes"],
        "goldset_gbps": div(g["bytes"] / 1e9 if g["bytes"] else None, g["wall_s"]),
        "peer_gbps": div(p["bytes"] / 1e9 if p["bytes"] else None, p["wall_s"]),
        "dd_gbps": div(d["bytes"] / 1e9 if d["bytes"] else None, d["wall_s"]),
        "goldset_over_dd_time": div(g["wall_s"], d["wall_s"]),
        "tools": by,
    }
    if cid in targets and row["speedup_peer_over_goldset"] is not None:  # judged only beside the peer
        s, m = row["speedup_peer_over_goldset"], row["rss_ratio_peer_over_goldset"]
        sd = row["speedup_incl_sync"]
        row["target"] = {"speedup_min": 5, "rss_ratio_min": 3,
                         "speed_met": s is not None and s >= 5, "rss_met": m is not None and m >= 3,
                         "speed_met_incl_sync": sd is not None and sd >= 5}
    rows.append(row)

# The whole peer-sizes work: the sums of the per-case medians over the cases
# both tools ran (issue 29's target: the peer takes at least 8x as long).
both = [r for r in rows if r["goldset_wall_s"] is not None and r["peer_wall_s"] is not None]
total = None
if both:
    gw = sum(r["goldset_wall_s"] for r in both)
    pw = sum(r["peer_wall_s"] for r in both)
    gs = sum(r["tools"]["goldset"]["wall_plus_sync_s"] for r in both)
    ps = sum(r["tools"]["peer"]["wall_plus_sync_s"] for r in both)
    total = {"cases": [r["case"] for r in both], "goldset_wall_s": gw, "peer_wall_s": pw,
             "speedup_peer_over_goldset": pw / gw, "speedup_incl_sync": ps / gs,
             "goldset_max_rss_mib": max(r["goldset_rss_mib"] for r in both),
             "peer_max_rss_mib": max(r["peer_rss_mib"] for r in both),
             "target": {"speedup_min": 8, "speed_met": pw / gw >= 8}}

res = {"created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
       "host": platform.node(), "cpus": int(ncpu), "reps": int(reps), "settle_s": float(settle),
       "load_average_start": load0, "load_average_end": load1,
       "note": "medians over reps; wall excludes the sync after each command (sync_after_s, in runs.jsonl; "
               "speedup_incl_sync includes it); the machine is shared, read ratios, not absolutes",
       "cases": rows, "total": total}
with open(os.path.join(out, "results.json"), "w") as f:
    json.dump(res, f, indent=1)

def fs(x, unit="", nd=1):
    return "-" if x is None else f"{x:.{nd}f}{unit}"

def gb(b):
    return "-" if b is None else f"{b / 1e9:.2f} GB"

def tgt(r):
    t = r.get("target")
    if not t:
        return ""
    return ("speed " + ("met" if t["speed_met"] else "MISSED")
            + " (incl. sync " + ("met" if t["speed_met_incl_sync"] else "MISSED") + ")"
            + ", RSS " + ("met" if t["rss_met"] else "MISSED"))

hdr = ["case", "goldset wall", "peer wall", "peer/goldset", "incl. sync", "goldset RSS", "peer RSS", "RSS peer/goldset",
       "bytes (goldset)", "goldset GB/s", "dd GB/s", "goldset/dd time", "target (case >=5x, <=1/3 RSS; total >=8x)"]
tab = []
for r in rows:
    tab.append([r["case"], fs(r["goldset_wall_s"], " s"), fs(r["peer_wall_s"], " s"),
                fs(r["speedup_peer_over_goldset"], "x", 2), fs(r["speedup_incl_sync"], "x", 2),
                fs(r["goldset_rss_mib"], " MiB", 0),
                fs(r["peer_rss_mib"], " MiB", 0), fs(r["rss_ratio_peer_over_goldset"], "x", 1),
                gb(r["goldset_bytes"]), fs(r["goldset_gbps"], "", 3), fs(r["dd_gbps"], "", 3),
                fs(r["goldset_over_dd_time"], "x", 2), tgt(r)])
if total:
    tab.append([f"total ({len(total['cases'])} cases)", fs(total["goldset_wall_s"], " s"), fs(total["peer_wall_s"], " s"),
                fs(total["speedup_peer_over_goldset"], "x", 2), fs(total["speedup_incl_sync"], "x", 2),
                fs(total["goldset_max_rss_mib"], " MiB max", 0), fs(total["peer_max_rss_mib"], " MiB max", 0),
                "", "", "", "", "", "total >= 8x " + ("met" if total["target"]["speed_met"] else "MISSED")])
w = [max(len(h), *(len(t[i]) for t in tab)) if tab else len(h) for i, h in enumerate(hdr)]
print()
print("  ".join(h.ljust(w[i]) for i, h in enumerate(hdr)).rstrip())
for t in tab:
    print("  ".join(c.ljust(w[i]) for i, c in enumerate(t)).rstrip())
print(f"\nload average: start {load0}, end {load1} ({ncpu} CPUs); medians of {reps} reps, {settle} s idle before each command; "
      "wall excludes the post-run sync (see runs.jsonl)")
for r in rows:
    if r["goldset_over_dd_time"]:
        print(f"{r['case']}: goldset is within {r['goldset_over_dd_time']:.2f}x of merely writing its bytes with dd")

with open(os.path.join(out, "results.md"), "w") as f:
    f.write(f"Load average: start {load0}, end {load1} ({ncpu} CPUs). Medians of {reps} reps, {settle} s idle before each command.\n\n")
    f.write("| " + " | ".join(hdr) + " |\n|" + "---|" * len(hdr) + "\n")
    for t in tab:
        f.write("| " + " | ".join(t) + " |\n")
    f.write("\nPer-run walls (s):\n\n")
    for r in rows:
        for t in ("goldset", "peer", "dd"):
            x = r["tools"][t]
            if x["runs"] or x["failed"]:
                f.write(f"- {r['case']} {t}: {', '.join(f'{v:.1f}' for v in x['walls_s'])}"
                        + (f" ({x['failed']} failed)" if x["failed"] else "")
                        + f"; load before each: {'; '.join(x['load_before'])}\n")
EOF

if ((GOBENCH)); then
	log "go test -bench (npy gen golden compare diff longbench/...)"
	raw=$OUT/logs/gobench.raw
	go test -run '^$' -bench . -benchtime 3x ./npy ./gen ./golden ./compare ./diff ./longbench/... >"$raw" 2>&1 || log "go test -bench exited non-zero (see $raw)"
	{
		echo "# go test -run '^\$' -bench . -benchtime 3x ./npy ./gen ./golden ./compare ./diff ./longbench/..."
		echo "# $(date -u +%FT%TZ); load average $(loadavg); $(go version)"
		grep -E '^(pkg:|cpu:|Benchmark|ok |FAIL|---|panic)' "$raw" || true
	} >"$OUT/gobench.txt"
	log "wrote bench/out/gobench.txt"
fi
[ "$RUNS" = /dev/null ] || log "wrote bench/out/results.json, bench/out/results.md, bench/out/runs.jsonl"
