#!/usr/bin/env bash
# A cluster across network namespaces: the ps and each worker in a namespace of their own with its
# own address, joined by veth pairs to a bridge namespace — real separate hosts as far as TCP is
# concerned. The namespaces and their 10.231.0.0/24 addresses are this test's own and vanish
# with it. Skipped (exit 77, "SKIPPED: <reason>", tests/lib.sh) where namespaces cannot be made
# (no root, no ip, no bridge or veth support). $1 is the build directory.
set -u
. "$(dirname "$0")/../lib.sh" || exit 1
B=${1:?build dir}
P="$B/examples/distributed"
export RILL_OPENCL_CPU_AS_GPU=0
tag="rill$$"
ns=("${tag}ps" "${tag}w0" "${tag}w1")
addr=(10.231.0.1 10.231.0.2 10.231.0.3)
br="${tag}br"
# A fresh logdir: the default, ./checkpoint/, would make a later run restore the step an earlier
# one reached and train nothing.
LOGDIR=$(mktemp -d)
cleanup() {
  for n in "${ns[@]}" "$br"; do ip netns del "$n" 2>/dev/null; done
  rm -rf "$LOGDIR"
}
trap cleanup EXIT
command -v ip >/dev/null || skip "no ip command (iproute2)"
ip netns add "$br" 2>/dev/null || skip "cannot create network namespaces here (needs root and netns support)"
ip netns exec "$br" ip link add name br0 type bridge || skip "no bridge support"
ip netns exec "$br" ip link set br0 up
for i in 0 1 2; do
  n=${ns[$i]}
  ip netns add "$n" || skip "cannot create namespace $n"
  ip link add "v${tag}a$i" type veth peer name "v${tag}b$i" || skip "no veth support"
  ip link set "v${tag}a$i" netns "$n"
  ip link set "v${tag}b$i" netns "$br"
  ip netns exec "$n" ip link set "v${tag}a$i" name eth0
  ip netns exec "$n" ip addr add "${addr[$i]}/24" dev eth0
  ip netns exec "$n" ip link set eth0 up
  ip netns exec "$n" ip link set lo up
  ip netns exec "$br" ip link set "v${tag}b$i" master br0
  ip netns exec "$br" ip link set "v${tag}b$i" up
done

fail=0; checks=0
check() { checks=$((checks+1)); if ! eval "$1"; then echo "FAIL: $2"; fail=$((fail+1)); fi; }
PS="${addr[0]}:2222"; WS="${addr[1]}:2222,${addr[2]}:2222"
flags=(--ps_hosts="$PS" --worker_hosts="$WS" --learning_rate=0.01 --train_steps=4000 --steps_to_validate=1000 --logdir="$LOGDIR")
ip netns exec "${ns[0]}" "$P" "${flags[@]}" --job_name=ps --task_index=0 > /tmp/$tag.ps 2>&1 &
pspid=$!
ip netns exec "${ns[1]}" "$P" "${flags[@]}" --job_name=worker --task_index=0 > /tmp/$tag.w0 2>&1 &
w0=$!
ip netns exec "${ns[2]}" "$P" "${flags[@]}" --job_name=worker --task_index=1 > /tmp/$tag.w1 2>&1 &
w1=$!
wait $w0; r0=$?
wait $w1; r1=$?
kill -TERM $pspid 2>/dev/null; wait $pspid; rp=$?
cat /tmp/$tag.w0 | tail -3
check "[ $r0 -eq 0 ] && [ $r1 -eq 0 ]" "workers exit 0 (got $r0, $r1)"
check "[ $rp -eq 0 ]" "ps stops cleanly on SIGTERM (got $rp)"
last=$(grep '^final:' /tmp/$tag.w0)
w=$(echo "$last" | sed 's/.*weight \([-0-9.]*\),.*/\1/')
b=$(echo "$last" | sed 's/.*biase \([-0-9.]*\),.*/\1/')
check "awk -v w=$w 'BEGIN{exit !(w>1.9 && w<2.1)}'" "weight $w within 0.1 of 2"
check "awk -v b=$b 'BEGIN{exit !(b>9.7 && b<10.3)}'" "biase $b within 0.3 of 10"
# The ps really is another host: it cannot be reached on loopback from a worker namespace.
check "! ip netns exec ${ns[1]} bash -c 'echo > /dev/tcp/127.0.0.1/2222' 2>/dev/null" "ps not on the worker's loopback"
rm -f /tmp/$tag.ps /tmp/$tag.w0 /tmp/$tag.w1
echo "$((checks-fail)) passed, $fail failed"
[ $fail -eq 0 ]
