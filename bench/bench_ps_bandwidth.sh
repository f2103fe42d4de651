#!/usr/bin/env bash
# bench_ps_bandwidth.sh - parallel parameter-server bandwidth: a model of MIB MiB (default 64)
# split over P = 1, 2, 4 ps tasks, each ps in a network namespace of its own behind a veth link
# limited to RATE (default 1gbit) with tc's tbf in both directions, one worker in the root
# namespace (its own side not limited: each ps has its own link) pulling and pushing every
# variable each step (bench/bench_ps_bandwidth.c). The baseline of the master before issue 12,
# which called the ps tasks one after another, was recorded in docs/BENCHMARKS.md before that
# master was removed (time(P)*P/time(1) = 1.98 for P=2, 3.99 for P=4).
#
#   bench/bench_ps_bandwidth.sh BUILD_DIR [MIB] [STEPS]          (as root: it makes namespaces)
#
# Reported: the best step time of STEPS (default 4) per (P, mode), and time(P) * P / time(1),
# the scaling figure (1.0 is ideal: P links carry P times the bytes per second). Without root or
# `ip netns` it says so and exits 0 (it is a benchmark, not a test).
set -uo pipefail
B=${1:?usage: bench/bench_ps_bandwidth.sh BUILD_DIR [MIB] [STEPS]}
MIB=${2:-64}
STEPS=${3:-4}
RATE=${BENCH_RATE:-1gbit}
BIN="$B/bench/bench_ps_bandwidth"
[ -x "$BIN" ] || { echo "bench_ps_bandwidth.sh: $BIN is missing (build first)"; exit 1; }
if [ "$(id -u)" != 0 ] || ! ip netns add rill_bw_probe 2>/dev/null; then
    echo "bench_ps_bandwidth.sh: skipped: needs root and ip netns"
    exit 0
fi
ip netns del rill_bw_probe
NS=()
cleanup() {
    for n in "${NS[@]}"; do ip netns pids "$n" 2>/dev/null | xargs -r kill 2>/dev/null; done
    sleep 0.2
    for n in "${NS[@]}"; do ip netns del "$n" 2>/dev/null; done
    for i in 0 1 2 3; do ip link del "rbw$i" 2>/dev/null; done
}
trap cleanup EXIT
# ps i: namespace rill_bw$i, veth rbw$i (root, 10.77.$i.1) <-> eth0 (ns, 10.77.$i.2), tbf on both.
for i in 0 1 2 3; do
    n="rill_bw$i"
    NS+=("$n")
    ip netns add "$n"
    ip link add "rbw$i" type veth peer name eth0 netns "$n"
    ip addr add "10.77.$i.1/24" dev "rbw$i"
    ip link set "rbw$i" up
    ip -n "$n" addr add "10.77.$i.2/24" dev eth0
    ip -n "$n" link set eth0 up
    ip -n "$n" link set lo up
    # ps tasks push to the worker (10.77.0.1, on link 0): through this link's root side
    ip -n "$n" route add default via "10.77.$i.1"
    tc qdisc add dev "rbw$i" root tbf rate "$RATE" burst 256kb latency 50ms
    ip netns exec "$n" tc qdisc add dev eth0 root tbf rate "$RATE" burst 256kb latency 50ms
done
lscpu | sed -n 's/^Model name: *//p' | head -1 | sed 's/^/cpu: /'
echo "links: veth + tbf $RATE each way, one per ps; model $MIB MiB; best of $STEPS steps"
declare -A T
for P in 1 2 4; do
    hosts=""
    for ((i = 0; i < P; i++)); do hosts+="${hosts:+,}10.77.$i.2:$((23000 + i))"; done
    worker="10.77.0.1:23100"
    for mode in parallel; do
        pids=()
        for ((i = 0; i < P; i++)); do
            ip netns exec "rill_bw$i" "$BIN" ps "$hosts" "$worker" "$i" >/dev/null 2>&1 &
            pids+=($!)
        done
        sleep 0.5
        line=$(timeout 600 "$BIN" worker "$hosts" "$worker" "$MIB" \
            "$STEPS" 2>&1 | tee /tmp/bw_worker.log | grep "^RESULT")
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
        wait 2>/dev/null
        t=$(sed -n 's/.* step_s=\([0-9.]*\).*/\1/p' <<<"$line")
        gb=$(sed -n 's/.* gbit_s=\([0-9.]*\).*/\1/p' <<<"$line")
        T[$P,$mode]=$t
        printf '  P=%d %-8s step %7s s  (%s Gbit/s of model traffic)\n' "$P" "$mode" "${t:-failed}" "${gb:-?}"
    done
done
for mode in parallel; do
    for P in 2 4; do
        a=${T[1,$mode]:-}
        b=${T[$P,$mode]:-}
        [ -n "$a" ] && [ -n "$b" ] &&
            awk -v a="$a" -v b="$b" -v p="$P" -v m="$mode" \
                'BEGIN { printf "RESULT ps_scaling_%s_p%d=%.3f  (time(P)*P/time(1); 1.0 is ideal)\n", m, p, b * p / a }'
    done
done
