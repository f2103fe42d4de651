#!/usr/bin/env bash
# build/examples/distributed under real launchers, 1 ps + 2 workers each time, on this machine:
#
#   mpirun --oversubscribe -np 3 distributed ...            (Open MPI)
#   srun -n 3 distributed ...  and  srun -m cyclic -n 3 ...  (Slurm)
#   sbatch: a script that runs  srun distributed --issync=1 ...
#   sbatch: a script that runs  mpirun -np 3 distributed ...  (every rank inherits the batch
#           step's SLURM_PROCID=0, which must not make every rank ps 0: issue 13 row 10)
#
# For Slurm the test is its own single-node cluster: it writes a slurm.conf into a temporary
# folder (SLURM_CONF), makes a munge key, and starts munged, slurmctld and slurmd itself, and
# stops them at the end. Each run must train (the chief's final line at the last step, the
# checkpoint of that step, the ps saying all 2 workers finished) and end by itself, exit 0,
# within a bound: the ps tasks exit once the workers are done, so the job ends (sbatch's job is
# COMPLETED with ExitCode 0:0, far below its time limit, not TIMEOUT). A part whose launcher
# cannot run here is skipped with the reason ("SKIPPED: ...", tests/lib.sh); missing packages are
# a failure under CI (`make test` installs openmpi-bin, slurm-wlm and munge). $1 is the build
# directory.
set -u
. "$(dirname "$0")/../lib.sh" || exit 1
B=$(cd "${1:?build dir}" && pwd)
P="$B/examples/distributed"
export RILL_OPENCL_CPU_AS_GPU=0
STEPS=300
FLAGS="--train_steps=$STEPS --learning_rate=0.01 --steps_to_validate=100 --startup_deadline=20"
# munged wants every folder above its socket searchable by all.
T=$(mktemp -d "${TMPDIR:-/tmp}/rill-launchers.XXXXXX") && chmod 755 "$T" || exit 1
pids=() # daemons this test started, stopped in this order's reverse
cleanup() {
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null; done
    for p in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null
    done
    rm -rf "$T"
}
trap cleanup EXIT
ran=0
# part_skip REASON: this part cannot run here.
part_skip() { echo "SKIPPED: $1"; }
# part_missing REASON: a package `make test` installs is not here: a failure where required (CI,
# RILL_REQUIRE_LAUNCHERS=1), else a skip.
part_missing() {
    if required RILL_REQUIRE_LAUNCHERS; then
        check false "$1 (required here: CI or RILL_REQUIRE_LAUNCHERS=1 is set)"
    else
        part_skip "$1"
    fi
}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", b - a}'; }
# A port in 20000-32000 with the next $1 (default 0) free too: nothing answers on any of them.
free_ports() {
    local n=${1:-0}
    while :; do
        PORT=$((20000 + (RANDOM * 32768 + RANDOM) % 12001))
        local k busy=0
        for k in $(seq 0 "$n"); do
            (exec 3<>"/dev/tcp/127.0.0.1/$((PORT + k))") 2>/dev/null && busy=1
        done
        [ $busy -eq 0 ] && return 0
    done
}
# trained NAME LOG LOGDIR SOURCE: what every run must show in its output LOG (all three tasks'):
# each task took its cluster from SOURCE, one ps and two distinct workers, both workers' final
# lines at step >= STEPS, the ps exiting because both workers finished, and the checkpoint of
# that step. The log's end is shown when something is missing.
trained() {
    local name=$1 log=$2 logdir=$3 source=$4 before=$fail
    check "[ \$(grep -c 'cluster from $source:' '$log') -eq 3 ]" "$name: all 3 tasks took the cluster from $source"
    check "[ \$(grep -c '^/job:ps/task:0: cluster from' '$log') -eq 1 ] && [ \$(grep -c '^/job:worker/task:[01]: cluster from' '$log') -eq 2 ] && [ \$(grep -o '^/job:worker/task:[01]: cluster' '$log' | sort -u | wc -l) -eq 2 ]" \
        "$name: the ranks became ps 0, worker 0 and worker 1"
    local low
    low=$(sed -n 's/^final: global_step \([0-9]*\),.*/\1/p' "$log" | sort -n | head -1)
    check "[ \$(grep -c '^final: global_step' '$log') -eq 2 ] && [ '${low:-0}' -ge $STEPS ]" \
        "$name: both workers trained to global step >= $STEPS (lowest final: ${low:-none})"
    check "grep -q '^/job:ps/task:0: exiting: all 2 workers finished$' '$log'" \
        "$name: the ps exited because all 2 workers finished"
    local ck
    ck=$(sed -n 's/^model_checkpoint_path: "\(.*\)"$/\1/p' "$logdir/checkpoint" 2>/dev/null)
    check "[ '${ck##*-}' -ge $STEPS ] 2>/dev/null && [ -f '$ck.index' ]" \
        "$name: the chief's last checkpoint is of step >= $STEPS (${ck##*/})"
    [ $fail -eq $before ] || grep -v '^I[0-9]' "$log" | tail -n 12 | sed 's/^/    | /'
}

# --- Open MPI's mpirun ---
if ! command -v mpirun >/dev/null; then
    part_missing "mpirun: Open MPI's mpirun is not installed (Debian: openmpi-bin)"
else
    ran=1
    free_ports 2
    mkdir -p "$T/mpi"
    t0=$(now)
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RILL_BASE_PORT=$PORT \
        timeout 60 mpirun --oversubscribe -np 3 -x RILL_BASE_PORT -x RILL_OPENCL_CPU_AS_GPU \
        "$P" $FLAGS --logdir="$T/mpi/ck" >"$T/mpi/out.log" 2>&1
    rc=$?
    t1=$(now)
    check "[ $rc -eq 0 ]" "mpirun -np 3 ends by itself with exit 0 within 60 s (exit $rc$([ $rc -eq 124 ] && echo ': still running after 60 s'))"
    trained "mpirun" "$T/mpi/out.log" "$T/mpi/ck" mpi
    echo "  mpirun -np 3: $(secs "$t0" "$t1") s"
fi

# --- Slurm: a single-node cluster of this test's own ---
slurm_start() {
    local cmd
    for cmd in slurmctld slurmd srun sbatch scontrol munged munge; do
        command -v $cmd >/dev/null || command -v /usr/sbin/$cmd >/dev/null || {
            part_missing "Slurm: $cmd is not installed (Debian: slurm-wlm and munge)"
            return 1
        }
    done
    [ "$(id -u)" -eq 0 ] || {
        part_skip "Slurm: slurmd has to run as root to start jobs, and this test runs as $(id -un)"
        return 1
    }
    local S="$T/slurm"
    mkdir -p "$S/state" "$S/spool" && chmod 755 "$S"
    # munge: a key of this test's own, a daemon on a socket of its own
    if command -v mungekey >/dev/null; then
        mungekey -c -k "$S/munge.key" || { part_skip "Slurm: mungekey cannot make a key"; return 1; }
    else
        dd if=/dev/urandom of="$S/munge.key" bs=1024 count=1 2>/dev/null && chmod 400 "$S/munge.key"
    fi
    munged -F --key-file="$S/munge.key" --socket="$S/munge.sock" --pid-file="$S/munged.pid" \
        --log-file="$S/munged.log" --seed-file="$S/munged.seed" >"$S/munged.out" 2>&1 &
    pids+=($!)
    local up=0
    for _ in $(seq 100); do
        munge -n -S "$S/munge.sock" 2>/dev/null | unmunge -S "$S/munge.sock" >/dev/null 2>&1 && { up=1; break; }
        sleep 0.1
    done
    [ $up -eq 1 ] || { part_skip "Slurm: munged did not answer within 10 s: $(tail -n 2 "$S/munged.out")"; return 1; }
    free_ports 1
    cat >"$S/slurm.conf" <<EOF
ClusterName=rilltest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
AuthType=auth/munge
AuthInfo=socket=$S/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=600
KillWait=5
NodeName=localhost NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=rill Nodes=localhost Default=YES MaxTime=10 State=UP
EOF
    export SLURM_CONF="$S/slurm.conf"
    slurmctld -D -i >"$S/slurmctld.out" 2>&1 &
    pids+=($!)
    slurmd -D -N localhost >"$S/slurmd.out" 2>&1 &
    pids+=($!)
    for _ in $(seq 200); do
        scontrol show node localhost 2>/dev/null | grep -q 'State=IDLE' && return 0
        sleep 0.1
    done
    part_skip "Slurm: slurmctld and slurmd did not bring the node up within 20 s: $(tail -n 2 "$S/slurmctld.log" "$S/slurmd.log" 2>&1 | tr '\n' ' ')"
    return 1
}

# job_state ID: waits up to 90 s for job ID to end; "STATE EXITCODE RUNTIME" of its record.
job_state() {
    local st=""
    for _ in $(seq 900); do
        st=$(scontrol -o show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
        case "$st" in PENDING | CONFIGURING | RUNNING | COMPLETING | "") sleep 0.1 ;; *) break ;; esac
    done
    local rec
    rec=$(scontrol -o show job "$1" 2>/dev/null)
    echo "${st:-unknown} $(echo "$rec" | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p') $(echo "$rec" | sed -n 's/.* RunTime=\([0-9:-]*\).*/\1/p')"
}
# The job id srun ran as, from its name.
job_of() { scontrol -o show job 2>/dev/null | grep "JobName=$1 " | sed -n 's/^JobId=\([0-9]*\) .*/\1/p' | tail -1; }

if slurm_start; then
    ran=1
    # srun -n 3, block (the default) and cyclic: one node either way, and the resolver must agree
    # with where Slurm says each task runs (SLURMD_NODENAME, SLURM_LOCALID).
    for dist in block cyclic; do
        free_ports 2
        L="$T/srun_$dist"
        mkdir -p "$L"
        t0=$(now)
        RILL_BASE_PORT=$PORT timeout 60 srun -n 3 -m $dist --job-name="rill-srun-$dist" \
            "$P" $FLAGS --logdir="$L/ck" >"$L/out.log" 2>&1
        rc=$?
        t1=$(now)
        read -r st code rt <<<"$(job_state "$(job_of "rill-srun-$dist")")"
        check "[ $rc -eq 0 ] && [ '$st' = COMPLETED ] && [ '$code' = 0:0 ]" \
            "srun -n 3 -m $dist ends by itself with exit 0 within 60 s (srun exit $rc, job $st, ExitCode $code)"
        trained "srun -m $dist" "$L/out.log" "$L/ck" slurm
        echo "  srun -n 3 -m $dist: $(secs "$t0" "$t1") s"
    done

    # sbatch: srun in a batch script (synchronous training), and mpirun in one (row 10)
    for how in srun mpirun; do
        L="$T/sbatch_$how"
        mkdir -p "$L"
        free_ports 2
        if [ $how = srun ]; then
            launch="srun \"$P\" $FLAGS --issync=1 --logdir=\"$L/ck\""
        elif command -v mpirun >/dev/null; then
            launch="OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 3 \"$P\" $FLAGS --logdir=\"$L/ck\""
        else
            part_missing "sbatch + mpirun: Open MPI's mpirun is not installed (Debian: openmpi-bin)"
            continue
        fi
        cat >"$L/job.sh" <<EOF
#!/bin/bash
#SBATCH --ntasks=3
#SBATCH --time=1
#SBATCH --job-name=rill-sbatch-$how
export RILL_BASE_PORT=$PORT RILL_OPENCL_CPU_AS_GPU=0
$launch
EOF
        t0=$(now)
        id=$(sbatch --parsable -o "$L/out.log" "$L/job.sh" 2>"$L/sbatch.err")
        read -r st code rt <<<"$(job_state "$id")"
        t1=$(now)
        check "[ -n '$id' ] && [ '$st' = COMPLETED ] && [ '$code' = 0:0 ]" \
            "sbatch (a script running $how) ends by itself: job ${id:-?} $st, ExitCode $code, RunTime $rt (limit 1 min)$(cat "$L/sbatch.err")"
        trained "sbatch + $how" "$L/out.log" "$L/ck" $([ $how = srun ] && echo slurm || echo mpi)
        echo "  sbatch with $how: job $st in $rt ($(secs "$t0" "$t1") s from sbatch to the end of its record)"
    done
fi

[ $ran -eq 1 ] || skip "neither Open MPI nor Slurm can run here"
finish
