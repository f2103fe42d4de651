#!/usr/bin/env bash
# Issue 13's rows 2, 3 and 11 against real clusters of build/examples/distributed on loopback:
#  (row 2) a cluster with a secret (rill-keygen, --cluster_secret_file): a stray task without it,
#      or with another, is refused before anything is served, and says so; the cluster's
#      variables stay finite (the stray had --learning_rate=1e30 and made them NaN before);
#      with --encrypt the cluster trains the same; a stray with its own --worker_hosts is
#      refused even without a secret (another cluster);
#  (row 3) 300 idle connections that finished their handshake no longer fill the ps: a stranger's
#      are refused at the handshake, and the cluster's restarted worker gets in;
#  (row 11) a second job on the same ports (its chief's run is not the running ps's) is refused
#      with an error that names the other run, and does not train on the first job's variables.
# $1 is the build directory.
set -u
. "$(dirname "$0")/../lib.sh" || exit 1
B=${1:?build dir}
P="$B/examples/distributed"
KEYGEN="$B/bin/rill-keygen"
export RILL_OPENCL_CPU_AS_GPU=0
unset RILL_JOB_ID SLURM_JOB_ID PMIX_NAMESPACE OMPI_MCA_ess_base_jobid RILL_CLUSTER_SECRET_FILE
T=$(mktemp -d)
bg=()
trap 'for p in "${bg[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
show() { echo "--- $1"; sed 's/^/  | /' "$1" | tail -${2:-15}; }

"$KEYGEN" "$T/key" >/dev/null && "$KEYGEN" "$T/other.key" >/dev/null
check "[ -s '$T/key' ] && [ \"\$(stat -c %a '$T/key')\" = 600 ]" "rill-keygen writes a 0600 secret"

# --- row 2: a secret keeps a stray task out -----------------------------------------------------
free_port; ps=127.0.0.1:$PORT; free_port; w0=127.0.0.1:$PORT; free_port; w1=127.0.0.1:$PORT
common="--ps_hosts=$ps --worker_hosts=$w0,$w1 --cluster_secret_file=$T/key --startup_deadline=30"
"$P" $common --job_name=ps --task_index=0 >"$T/ps.log" 2>&1 & psp=$!; bg+=($psp)
"$P" $common --job_name=worker --task_index=0 --train_steps=3000 --learning_rate=0.01 \
    --logdir="$T/ck" --save_model_secs=0.5 >"$T/w0.log" 2>&1 & w0p=$!; bg+=($w0p)
for _ in $(seq 100); do grep -q "training (chief)\|step " "$T/w0.log" 2>/dev/null && break; sleep 0.1; done
# The stray runs as worker 1 with the other secret, then with none.
timeout 60 "$P" --ps_hosts=$ps --worker_hosts=$w0,$w1 --job_name=worker --task_index=1 \
    --learning_rate=1e30 --cluster_secret_file="$T/other.key" --startup_deadline=5 \
    >"$T/stray1.log" 2>&1; rc1=$?
timeout 60 "$P" --ps_hosts=$ps --worker_hosts=$w0,$w1 --job_name=worker --task_index=1 \
    --learning_rate=1e30 --startup_deadline=5 >"$T/stray2.log" 2>&1; rc2=$?
check "[ $rc1 -ne 0 ] && grep -q 'cluster secret' '$T/stray1.log'" \
    "a stray with another secret fails, naming the secret (rc $rc1)" || show "$T/stray1.log"
check "[ $rc2 -ne 0 ] && grep -q 'requires a cluster secret' '$T/stray2.log'" \
    "a stray without the secret fails: the ps requires one (rc $rc2)" || show "$T/stray2.log"
check "! grep -q 'training$' '$T/stray1.log' '$T/stray2.log'" "neither stray trained"
# (A non-chief asks the chief for the run first: the chief's server refuses it.)
check "grep -q 'refused .*cluster secret' '$T/ps.log' '$T/w0.log'" "the refusals are logged" || show "$T/w0.log"
# The real worker 1 joins and the cluster trains to the end, finite.
"$P" $common --job_name=worker --task_index=1 --train_steps=3000 --learning_rate=0.01 \
    >"$T/w1.log" 2>&1 & w1p=$!; bg+=($w1p)
wait_exit $w0p 120; wait $w0p; r0=$?
wait_exit $w1p 60; wait $w1p; r1=$?
check "[ $r0 -eq 0 ] && [ $r1 -eq 0 ]" "the cluster's workers exit 0 ($r0, $r1)" || { show "$T/w0.log"; show "$T/w1.log"; }
check "grep -q '^final: global_step' '$T/w0.log' && ! grep -qi 'nan' '$T/w0.log'" \
    "the chief's final values are finite" || show "$T/w0.log"
kill -TERM $psp 2>/dev/null; wait_exit $psp 10

# A stray with its own --worker_hosts names another cluster: refused without any secret.
free_port; ps=127.0.0.1:$PORT; free_port; w0=127.0.0.1:$PORT; free_port; w1=127.0.0.1:$PORT
free_port; w9=127.0.0.1:$PORT
"$P" --ps_hosts=$ps --worker_hosts=$w0,$w1 --job_name=ps --task_index=0 >"$T/ps2.log" 2>&1 & psp=$!; bg+=($psp)
timeout 60 "$P" --ps_hosts=$ps --worker_hosts=$w9 --job_name=worker --task_index=0 \
    --learning_rate=1e30 --startup_deadline=5 --logdir="$T/stray3" >"$T/stray3.log" 2>&1; rc=$?
check "[ $rc -ne 0 ] && grep -q 'is a task of another cluster' '$T/stray3.log'" \
    "a stray with its own --worker_hosts is refused as another cluster (rc $rc)" || show "$T/stray3.log"
kill -TERM $psp 2>/dev/null; wait_exit $psp 10

# --- row 11: a second job on the same ports ------------------------------------------------------
free_port; ps=127.0.0.1:$PORT; free_port; w0=127.0.0.1:$PORT
one="--ps_hosts=$ps --worker_hosts=$w0 --startup_deadline=10"
# (A ps of a finished job exits by itself; one that serves on, as TF's does, is the hazard.)
"$P" $one --job_name=ps --task_index=0 --ps_join_forever >"$T/psA.log" 2>&1 & psp=$!; bg+=($psp)
timeout 120 "$P" $one --job_name=worker --task_index=0 --train_steps=500 --learning_rate=0.01 \
    --logdir="$T/jobA" >"$T/A.log" 2>&1; ra=$?
check "[ $ra -eq 0 ]" "job A trains and exits 0 ($ra)" || show "$T/A.log"
# Job B: the same ports, its own logdir (so its own run); A's ps still serves.
timeout 60 "$P" $one --job_name=worker --task_index=0 --train_steps=1000 --learning_rate=0.01 \
    --logdir="$T/jobB" >"$T/B.log" 2>&1; rb=$?
check "[ $rb -ne 0 ] && grep -q 'belongs to another run of this cluster' '$T/B.log'" \
    "job B's chief is refused: another run holds these ports (rc $rb)" || show "$T/B.log"
check "! grep -q 'going on from it' '$T/B.log'" "job B did not go on from job A's variables"
# Job A's chief restarted (its logdir keeps its run id) rejoins its own ps. (It hung before: the
# ps pushed to the restarted chief on the connection its first run had left, and the push was
# lost without a word.)
timeout 120 "$P" $one --job_name=worker --task_index=0 --train_steps=800 --learning_rate=0.01 \
    --logdir="$T/jobA" >"$T/A2.log" 2>&1; ra2=$?
check "[ $ra2 -eq 0 ]" "job A's chief restarted rejoins its run and exits 0 ($ra2)" || show "$T/A2.log"
kill -TERM $psp 2>/dev/null; wait_exit $psp 10

# --- row 3: idle connections no longer lock a worker out ----------------------------------------
free_port; ps=127.0.0.1:$PORT; free_port; w0=127.0.0.1:$PORT
one="--ps_hosts=$ps --worker_hosts=$w0 --startup_deadline=20"
"$P" $one --job_name=ps --task_index=0 >"$T/ps3.log" 2>&1 & psp=$!; bg+=($psp)
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/${ps##*:}") 2>/dev/null && break; sleep 0.1; done
# 300 connections that answer the challenge with a (v2, identity-less) handshake and then idle.
python3 - "${ps##*:}" >"$T/idle.log" 2>&1 <<'PY' &
import socket, struct, sys, time
port = int(sys.argv[1]); held = []; refused = 0
hs = bytearray(90); struct.pack_into("<I", hs, 0, 2)
hdr = b"RILL" + bytes([2, 2]) + b"\0\0" + struct.pack("<QII Q", 0, len(hs), 0, 0)
for i in range(300):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.recv(68); s.sendall(hdr + hs)
    r = s.recv(64)
    if len(r) >= 6 and r[5] == 6: refused += 1
    held.append(s)
print(f"held {len(held)}, refused {refused}", flush=True)
time.sleep(30)
PY
idlep=$!; bg+=($idlep)
for _ in $(seq 100); do grep -q held "$T/idle.log" && break; sleep 0.1; done
check "grep -q 'refused 300' '$T/idle.log'" "the 300 identity-less handshakes are refused ($(cat "$T/idle.log"))"
timeout 120 "$P" $one --job_name=worker --task_index=0 --train_steps=300 --learning_rate=0.01 \
    --logdir="$T/row3" >"$T/w3.log" 2>&1; rw=$?
check "[ $rw -eq 0 ]" "a worker started meanwhile gets in and trains (rc $rw)" || show "$T/w3.log"
kill $idlep 2>/dev/null
kill -TERM $psp 2>/dev/null; wait_exit $psp 10

# --- an encrypted cluster trains the same -------------------------------------------------------
free_port; ps=127.0.0.1:$PORT; free_port; w0=127.0.0.1:$PORT
enc="--ps_hosts=$ps --worker_hosts=$w0 --cluster_secret_file=$T/key --encrypt --startup_deadline=20"
"$P" $enc --job_name=ps --task_index=0 >"$T/ps4.log" 2>&1 & psp=$!; bg+=($psp)
timeout 120 "$P" $enc --job_name=worker --task_index=0 --train_steps=500 --learning_rate=0.01 \
    --logdir="$T/enc" >"$T/w4.log" 2>&1; re=$?
check "[ $re -eq 0 ] && grep -q '^final: global_step 500' '$T/w4.log'" \
    "an encrypted cluster trains to the end (rc $re)" || show "$T/w4.log"
kill -TERM $psp 2>/dev/null; wait_exit $psp 10
finish
