#!/usr/bin/env bash
# A network link cut for 10 s during training: the ps and each worker in a network namespace of
# their own (as in test_netns_cluster.sh: veth pairs to a bridge namespace, real separate hosts
# as far as TCP is concerned), asynchronous training (examples/distributed --issync=0); the ps's
# link is set down (`ip link set ... down` on the bridge's end of its veth) while both workers
# are mid-step, and up again 10 s later. Nothing is closed, so no task hears of it: what rill
# does is ride it out. The steps stall while the link is down (checked: no step is printed in
# the middle 6 s of the cut), TCP's retransmissions carry the steps in flight across once it is
# up, training finishes, and every task exits 0 (the ps by itself) with no error in any log.
# The time from the link coming up to the next step is printed. Skipped (exit 77, "SKIPPED:
# <reason>", tests/lib.sh) where namespaces cannot be made (no root, no ip, no bridge or veth
# support). $1 is the build directory.
set -u
. "$(dirname "$0")/../lib.sh" || exit 1
. "$(dirname "$0")/cluster_lib.sh" || exit 1
cluster_init "${1:?build dir}"
T0=$(now)
CUT_S=10
tag="rf$$"
ns=("${tag}ps" "${tag}w0" "${tag}w1")
addr=(10.232.0.1 10.232.0.2 10.232.0.3)
br="${tag}br"
netns_cleanup() {
    cluster_cleanup
    local n
    for n in "${ns[@]}" "$br"; do ip netns del "$n" 2>/dev/null; done
}
trap netns_cleanup EXIT
command -v ip >/dev/null || skip "no ip command (iproute2)"
ip netns add "$br" 2>/dev/null || skip "cannot create network namespaces here (needs root and netns support)"
ip netns exec "$br" ip link add name br0 type bridge 2>/dev/null || skip "no bridge support"
ip netns exec "$br" ip link set br0 up
for i in 0 1 2; do
    n=${ns[$i]}
    ip netns add "$n" || skip "cannot create namespace $n"
    ip link add "v${tag}a$i" type veth peer name "v${tag}b$i" 2>/dev/null || skip "no veth support"
    ip link set "v${tag}a$i" netns "$n"
    ip link set "v${tag}b$i" netns "$br"
    ip netns exec "$n" ip link set "v${tag}a$i" name eth0
    ip netns exec "$n" ip addr add "${addr[$i]}/24" dev eth0
    ip netns exec "$n" ip link set eth0 up
    ip netns exec "$n" ip link set lo up
    ip netns exec "$br" ip link set "v${tag}b$i" master br0
    ip netns exec "$br" ip link set "v${tag}b$i" up
done

STEPS=60000 CUT_AT=3000 V=100
[ "$SANITIZED" = 1 ] && STEPS=20000 CUT_AT=1000
# Each task is alone in its namespace: fixed ports do.
PS_HOSTS="${addr[0]}:2222" WORKER_HOSTS="${addr[1]}:2222,${addr[2]}:2222"
FLAGS=(--issync=0 --learning_rate=0.01 --train_steps="$STEPS" --steps_to_validate="$V"
       --startup_deadline=30 --logdir="$T/logdir")
RUN_PREFIX=(ip netns exec "${ns[0]}"); start_task ps0 ps 0
RUN_PREFIX=(ip netns exec "${ns[1]}"); start_task w0 worker 0 "${FLAGS[@]}"
RUN_PREFIX=(ip netns exec "${ns[2]}"); start_task w1 worker 1 "${FLAGS[@]}"
RUN_PREFIX=()

wait_step $CUT_AT 60 "$T/w0.log" "$T/w1.log"
check "[ $? -eq 0 ]" "the cluster trains across the namespaces (step $(last_step "$T"/w*.log))"
wait_log '^/job:worker/task:1: training$' 30 "$T/w1.log"
check "[ $? -eq 0 ]" "worker 1 trains too"
link="v${tag}b0"
t_cut=$(now)
ip netns exec "$br" ip link set "$link" down
check "[ $? -eq 0 ]" "the ps's link goes down"
at=$(last_step "$T/w0.log" "$T/w1.log")
sleep 2
s2=$(last_step "$T/w0.log" "$T/w1.log")
sleep $((CUT_S - 4))
s8=$(last_step "$T/w0.log" "$T/w1.log")
check "[ '$s2' = '$s8' ] && [ $s8 -lt $STEPS ]" "training stalls while the link is down (step $s2 at 2 s, $s8 at $((CUT_S - 2)) s)"
check "alive w0 && alive w1 && alive ps0" "every task is still up $((CUT_S - 2)) s into the cut"
sleep 2
ip netns exec "$br" ip link set "$link" up
check "[ $? -eq 0 ]" "the ps's link is up again after $(elapsed "$t_cut") s"
t_up=$(now)
# The next step after the link is up (TCP retransmits with backoff: up to ~13 s after the cut).
resumed=""
for _ in $(seq 1200); do
    [ "$(last_step "$T/w0.log" "$T/w1.log")" -gt "$s8" ] && { resumed=$(elapsed "$t_up"); break; }
    alive w0 || alive w1 || break
    sleep 0.05
done
check "[ -n '$resumed' ]" "training resumes after the link is up (${resumed:-not within 60} s later)"

reap w0 120; rc0=$RC
reap w1 120; rc1=$RC
reap ps0 30; rcp=$RC # it ends by itself once both workers have finished
check "[ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && [ $rcp -eq 0 ]" \
    "the cluster rides out the cut: the workers exit 0, then the ps by itself (got $rc0, $rc1, ps $rcp)"
for w in w0 w1; do
    g=$(final_field "$T/$w.log" global_step)
    check "[ '${g:-0}' -ge $STEPS ]" "$w reaches global step $STEPS (got ${g:-?})"
done
check "! grep -h -E 'ERROR|FAIL|UNAVAILABLE|DEADLINE|missed a heartbeat' '$T/w0.log' '$T/w1.log' '$T/ps0.log'" \
    "no errors in any log"
echo "  (link down at step $at for $CUT_S s; the next step came ${resumed:-?} s after it was up; $(elapsed "$T0") s)"
cluster_finish
