"""graph_trainer's CUDA-graph analysis (is_cudagraphable, its static inputs) against
passcheck's capturability predicate and static-input rule on torchtitan's graphs. Every
node one refuses and the other accepts is printed; the test fails on a disagreement that
docs/verifying-a-python-pass.md does not classify (EXPECTED below).

    cudagraph_test.py PASSCHECK MODEL..."""
import json
import sys

import support
from passcheck_fx.titan import cudagraph, models

# Classified differences: op -> (who refuses it, why). See the differential table in
# docs/verifying-a-python-pass.md.
EXPECTED = {}

passcheck = support.passcheck_binary()
for model in sys.argv[2:] or models.MODELS:
    result = cudagraph.compare(model, passcheck=passcheck)
    print(json.dumps(result, indent=1, default=str))
    support.check(result["static_inputs_agree"], f"{model}: static inputs differ: {result['static_inputs']}")
    unexplained = [d for d in result["refused_only_by_graph_trainer"] + result["refused_only_by_passcheck"]
                   if d[1] not in EXPECTED]
    support.check(not unexplained, f"{model}: unclassified disagreements: {unexplained[:8]}")
