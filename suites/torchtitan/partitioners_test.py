"""PyTorch's partitioners (min-cut, min-cut after graph_trainer's SAC tags, default) and
passcheck's (partition-min-cut, partition-save-all) on torchtitan's joint graph: each
module bit for bit equal to the joint (passcheck equiv); what each saves is printed.

    partitioners_test.py PASSCHECK MODEL"""
import json
import sys

import support
from passcheck_fx.titan import partitioners

model = sys.argv[2] if len(sys.argv) > 2 else "llama3"
result = partitioners.verify_partitioners(model, passcheck=support.passcheck_binary())
print(json.dumps(result, indent=1, default=str))
support.check(not result["failures"], f"{model}: " + "; ".join(result["failures"]))
parts = result["partitioners"]
support.check(parts["torch min_cut"]["saved_bytes"] <= parts["torch default_partition"]["saved_bytes"],
              f"{model}: min-cut saves more than the default partition: {parts}")
# default_partition keeps the forward in the forward: it saves activations and its backward
# is about the joint's backward (it recomputed the whole forward when the joint conversion
# left the forward untagged).
support.check(parts["torch default_partition"]["saved_activation_bytes"] > 0
              and parts["torch default_partition"]["backward_nodes"] < parts["passcheck partition-min-cut"]["backward_nodes"],
              f"{model}: default_partition saves no activation or recomputes more than min-cut: {parts}")
