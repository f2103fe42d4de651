#!/usr/bin/env bash
# The seed's first program on PoCL standing in for a GPU (RILL_OPENCL_CPU_AS_GPU=1): add on
# GPU:0 with the mapping logged; /gpu:1 is TF's exact error and exit 1; soft placement rescues it.
# $1 is the build directory.
set -u
B=${1:?build dir}
P="$B/examples/device_placement"
export RILL_OPENCL_CPU_AS_GPU=1
fail=0; checks=0
check() { checks=$((checks+1)); if ! eval "$1"; then echo "FAIL: $2"; fail=$((fail+1)); fi; }

out=$("$P" --log_device_placement 2>&1); rc=$?
echo "$out"
check "[ $rc -eq 0 ]" "exit code $rc"
check "echo \"\$out\" | grep -qx 'Device mapping:'" "device mapping header"
check "echo \"\$out\" | grep -q '^/job:localhost/replica:0/task:0/device:GPU:0 -> device: 0, name: '" "GPU:0 in the mapping"
check "echo \"\$out\" | grep -qx 'add: (Add): /job:localhost/replica:0/task:0/device:GPU:0'" "add on GPU:0"
check "echo \"\$out\" | grep -qx 'a: (Const): /job:localhost/replica:0/task:0/device:CPU:0'" "a on CPU:0"
check "[ \"\$(echo \"\$out\" | tail -1)\" = '[2. 4. 6.]' ]" "prints [2. 4. 6.] last"

want="Cannot assign a device for operation 'add': Operation was explicitly assigned to /device:GPU:1 but available devices are [ /job:localhost/replica:0/task:0/device:CPU:0, /job:localhost/replica:0/task:0/device:GPU:0 ]. Make sure the device specification refers to a valid device."
out=$("$P" --device=/gpu:1 2>&1); rc=$?
check "[ $rc -eq 1 ]" "/gpu:1 exits 1 (got $rc)"
check "[ \"\$out\" = \"\$want\" ]" "exact error text, got: $out"

out=$("$P" --device=/gpu:1 --allow_soft_placement 2>&1); rc=$?
check "[ $rc -eq 0 ] && [ \"\$out\" = '[2. 4. 6.]' ]" "soft placement prints the result, got: $out"
out=$("$P" --device=/gpu:1 --allow_soft_placement --log_device_placement 2>&1)
check "echo \"\$out\" | grep -qx 'add: (Add): /job:localhost/replica:0/task:0/device:GPU:0'" "soft placement falls back to GPU:0 (a GPU kernel exists)"

out=$("$P" --device=/cpu:0 --log_device_placement 2>&1); rc=$?
check "[ $rc -eq 0 ] && echo \"\$out\" | grep -qx 'add: (Add): /job:localhost/replica:0/task:0/device:CPU:0'" "--device=/cpu:0"
out=$("$P" --device=/gpu:x 2>&1); rc=$?
check "[ $rc -ne 0 ] && echo \"\$out\" | grep -q \"Malformed device specification '/gpu:x'\"" "malformed spec, got: $out"

# Without the opt-in PoCL is a CPU device, not a GPU: /gpu:0 then does not exist.
out=$(RILL_OPENCL_CPU_AS_GPU=0 "$P" 2>&1); rc=$?
check "[ $rc -eq 1 ] && echo \"\$out\" | grep -q 'available devices are \[ /job:localhost/replica:0/task:0/device:CPU:0 \]'" "no GPU without the opt-in, got: $out"

echo "$checks checks, $fail failed"
echo "$((checks-fail)) passed, $fail failed"
[ $fail -eq 0 ]
