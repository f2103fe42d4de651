#!/usr/bin/env bash
# rill-inspect-checkpoint on the checkpoint TensorFlow wrote (tests/interop/data/tf_ckpt): the
# listing, a value, every value, the directory form, and the error exits. $1 is the build dir.
set -u
B=${1:?build dir}
P="$B/bin/rill-inspect-checkpoint"
G="$(cd "$(dirname "$0")/../interop/data/tf_ckpt" && pwd)"
fail=0; checks=0
check() { checks=$((checks+1)); if ! eval "$1"; then echo "FAIL: $2"; fail=$((fail+1)); fi; }

want_list='b (DT_BOOL) [3]
biase (DT_FLOAT) []
d (DT_DOUBLE) [3]
empty (DT_FLOAT) [0]
global_step (DT_INT64) []
h (DT_HALF) [2]
i (DT_INT32) [4]
layer/w (DT_FLOAT) [2,3]
rank4 (DT_FLOAT) [1,2,3,4]
s (DT_STRING) [3]
weight (DT_FLOAT) []'

out=$("$P" "$G/model.ckpt-100"); rc=$?
check "[ $rc -eq 0 ]" "listing exits 0 (got $rc)"
check "[ \"\$out\" = \"\$want_list\" ]" "listing is TF's debug string: $out"

out=$("$P" "$G"); rc=$?
check "[ $rc -eq 0 ] && [ \"\$out\" = \"\$want_list\" ]" "a directory lists its latest checkpoint"

out=$("$P" --file_name="$G/model.ckpt-100" --tensor_name=layer/w); rc=$?
check "[ $rc -eq 0 ]" "--tensor_name exits 0 (got $rc)"
check "[ \"\$out\" = \"\$(printf 'tensor_name:  layer/w\n[[1.  2.  3. ]\n [4.  5.  6.5]]')\" ]" \
  "layer/w printed as numpy does: $out"

out=$("$P" "$G/model.ckpt-50" --tensor_name=global_step); rc=$?
check "[ $rc -eq 0 ] && echo \"\$out\" | tail -1 | grep -qx 1200" "global_step of step 50 is 1200: $out"

out=$("$P" "$G" --all_tensors); rc=$?
check "[ $rc -eq 0 ]" "--all_tensors exits 0 (got $rc)"
check "[ \$(echo \"\$out\" | grep -c '^tensor_name:  ') -eq 11 ]" "--all_tensors names all 11 tensors"
check "echo \"\$out\" | grep -qx \"\\[b'a' b'' b'hello'\\]\"" "the string tensor's value: $out"
check "echo \"\$out\" | grep -A1 -x 'tensor_name:  weight' | tail -1 | grep -qx 2.5" "weight is 2.5"

out=$("$P" "$G" --all_tensor_names); rc=$?
check "[ $rc -eq 0 ] && [ \$(echo \"\$out\" | wc -l) -eq 11 ]" "--all_tensor_names lists 11 names"

err=$("$P" "$G/model.ckpt-7" 2>&1 >/dev/null); rc=$?
check "[ $rc -eq 1 ]" "a missing prefix exits 1 (got $rc)"
check "echo \"\$err\" | grep -q 'Failed to find any matching files for .*model.ckpt-7'" \
  "a missing prefix is named: $err"

err=$("$P" "$G" --tensor_name=nope 2>&1 >/dev/null); rc=$?
check "[ $rc -eq 1 ] && echo \"\$err\" | grep -q 'Key nope not found in checkpoint'" \
  "a missing tensor exits 1 with TF's text: $err"

err=$("$P" 2>&1); rc=$?
check "[ $rc -eq 1 ] && echo \"\$err\" | grep -q usage" "no arguments prints usage and exits 1"
err=$("$P" "$G" --bogus 2>&1); rc=$?
check "[ $rc -eq 1 ] && echo \"\$err\" | grep -q -- --bogus" "an unknown flag is named: $err"

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cp "$G"/model.ckpt-100.* "$T/"
printf 'garbage' > "$T/model.ckpt-100.index"
err=$("$P" "$T/model.ckpt-100" 2>&1 >/dev/null); rc=$?
check "[ $rc -eq 1 ] && echo \"\$err\" | grep -q 'model.ckpt-100.index'" \
  "a damaged index exits 1 naming the file: $err"

echo "$((checks-fail)) passed, $fail failed"
[ $fail -eq 0 ]
