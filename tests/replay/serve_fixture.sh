# Sourced (bash) by bindings/go/run-tests.sh and bindings/rust/run-tests.sh:
# serves step $step of the recorded PyTorch run of make_fixture.sh from a
# private copy of its checkpoint directory (pot open make caches the states
# it re-derives there), with the pot CLI of the install.
#
# Needs:   fixture (the fixture directory), prefix (the install), work (a
#          scratch directory), step.
# Defines: json_field KEY FILE; fixture (made absolute), potcli, samples,
#          run_id, root, size, pre (S_{step-1}, re-derived), post (S_step)
#          and other (S_3, a state of another step), and the manifests
#          $work/m$step.bin and $work/m$step-post.bin (with the post-state).

# json_field KEY FILE: the value of "KEY" in a JSON object without nested
# objects (a string's contents or a number).
json_field() {
  tr -d '\n' <"$2" | grep -o "\"$1\": *[^,}]*" | head -n 1 | sed 's/^[^:]*: *//; s/"//g'
}

fixture=$(cd "$fixture" && pwd)
potcli="$prefix/bin/pot"
if [ ! -x "$potcli" ]; then
  echo "run-tests.sh: $potcli is missing (the pot CLI serves the openings)" >&2
  exit 2
fi
cp -R "$fixture/ck" "$work/ck"
samples="$fixture/run/samples"
run_id=$(json_field run_id "$fixture/record.json")
root=$(json_field root "$fixture/record.json")
size=$(json_field size "$fixture/record.json")
"$potcli" open make "$work/ck" --step "$step" --dataset "$samples" --out "$work/m$step.bin" --json >"$work/make.json"
pre=$(json_field pre_state "$work/make.json")
"$potcli" open make "$work/ck" --step "$step" --dataset "$samples" --out "$work/m$step-post.bin" --post-state \
  --json >"$work/make-post.json"
post=$(json_field post_state "$work/make-post.json")
"$potcli" checkpoints state "$work/ck" --step 3 --dataset "$samples" --json >"$work/s3.json"
other=$(json_field path "$work/s3.json")
