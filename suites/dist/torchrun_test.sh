#!/usr/bin/env bash
# passcheck launched the way users launch distributed PyTorch: torchrun (the venv's,
# `python -m torch.distributed.run`) starts one passcheck process per rank with its
# rendezvous variables, and each runs its rank of the sharded check. Every rank must
# report BITWISE EQUAL and torchrun must exit 0; a mesh that does not match the world
# torchrun made must fail every rank with exit 2 and a message naming both sizes.
#   torchrun_test.sh PYTHON PASSCHECK
set -uo pipefail
python=$1 passcheck=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
port=$((29500 + RANDOM % 2000))
"$python" -m torch.distributed.run --nproc-per-node 2 --master-port "$port" --no-python \
  "$passcheck" check --model llama3 --parallel fsdp --mesh dp=2 --backend gloo --steps 2 > "$out" 2>&1
rc=$?
cat "$out"
[ $rc -eq 0 ] || { echo "torchrun_test: torchrun exited $rc" >&2; exit 1; }
equal=$(grep -c "BITWISE EQUAL" "$out")
[ "$equal" -eq 2 ] || { echo "torchrun_test: $equal of 2 ranks reported BITWISE EQUAL" >&2; exit 1; }
port=$((port + 1))
"$python" -m torch.distributed.run --nproc-per-node 2 --master-port "$port" --no-python \
  "$passcheck" check --model llama3 --parallel fsdp --mesh dp=4 --backend gloo --steps 1 > "$out" 2>&1
rc=$?
cat "$out"
[ $rc -ne 0 ] || { echo "torchrun_test: a dp=4 mesh over 2 ranks passed" >&2; exit 1; }
grep -q "has 4 ranks but the world has 2" "$out" || { echo "torchrun_test: no message naming the sizes" >&2; exit 1; }
echo "torchrun_test: 2 ranks bitwise equal; a mismatched mesh refused"
