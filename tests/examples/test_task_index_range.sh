#!/usr/bin/env bash
# --task_index past int's range is refused by every cluster program, never wrapped to another
# task (4294967296 wrapped to 0 and ran as the chief): distributed checks it itself, the
# Fashion-MNIST programs through a ranged int flag (rill_flags_define_int_range). Each must exit
# 2 at once with a message naming the flag and its range; nothing is started. $1 is the build
# directory.
set -u
B=${1:?build dir}
. "$(dirname "$0")/../lib.sh"
export RILL_OPENCL_CPU_AS_GPU=0
for prog in distributed fashion_mnist fashion_mnist_cnn; do
    P="$B/examples/$prog"
    [ -x "$P" ] || { check false "$P is built"; continue; }
    for bad in 4294967296 2147483648 -1; do
        # A cluster whose tasks are not there: a wrapped index would try to start and wait.
        err=$(timeout 30 "$P" --ps_hosts=127.0.0.1:9 --worker_hosts=127.0.0.1:9,127.0.0.1:9 \
              --job_name=worker --task_index=$bad --startup_deadline=1 2>&1); rc=$?
        check "[ $rc -eq 2 ] && echo \"\$err\" | grep -Eq -- '--task_index( must be between 0 and 2147483647|: expected an integer in \[0, 2147483647\])'" \
          "$prog --task_index=$bad is refused with exit 2 (got $rc): $(echo "$err" | head -2)"
    done
done
finish
