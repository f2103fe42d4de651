#!/usr/bin/env bash
# The seed's model end to end: converges with the issue's flags, prints the seed's lines, and
# its flags behave (--help, unknown flag, bad value). $1 is the build directory.
set -u
B=${1:?build dir}
P="$B/examples/linear_regression"
export RILL_OPENCL_CPU_AS_GPU=0
fail=0; checks=0
check() { checks=$((checks+1)); if ! eval "$1"; then echo "FAIL: $2"; fail=$((fail+1)); fi; }

out=$("$P" --learning_rate=0.01 --train_steps=20000 --steps_to_validate=1000 --seed=3)
rc=$?
check "[ $rc -eq 0 ]" "exit code $rc"
check "[ \$(echo \"\$out\" | grep -c '^step: [0-9]*, weight: -\?[0-9.]*, biase: -\?[0-9.]*, loss: [0-9.]*$') -eq 20 ]" \
  "20 lines in the seed's format"
last=$(echo "$out" | tail -1)
w=$(echo "$last" | sed 's/.*weight: \([-0-9.]*\),.*/\1/')
b=$(echo "$last" | sed 's/.*biase: \([-0-9.]*\),.*/\1/')
check "awk -v w=$w 'BEGIN{exit !(w>1.9 && w<2.1)}'" "weight $w within 0.1 of 2"
check "awk -v b=$b 'BEGIN{exit !(b>9.7 && b<10.3)}'" "biase $b within 0.3 of 10"
check "echo \"\$last\" | grep -q '^step: 20000,'" "last line is step 20000: $last"

help=$("$P" --help); rc=$?
check "[ $rc -eq 0 ]" "--help exits 0"
for f in learning_rate steps_to_validate train_steps; do
  check "echo \"\$help\" | grep -q -- '--$f'" "--help lists --$f"
done
check "echo \"\$help\" | grep -q '0.00003\|3e-05'" "--help shows the learning_rate default"

err=$("$P" --no_such_flag=1 2>&1); rc=$?
check "[ $rc -ne 0 ]" "unknown flag exits non-zero"
check "echo \"\$err\" | grep -q \"no_such_flag\"" "unknown flag is named: $err"
err=$("$P" --learning_rate=fast 2>&1); rc=$?
check "[ $rc -ne 0 ]" "bad value exits non-zero"
check "echo \"\$err\" | grep -q 'learning_rate'" "bad value names the flag: $err"

echo "$checks checks, $fail failed"
echo "$((checks-fail)) passed, $fail failed"
[ $fail -eq 0 ]
