"""torchtitan's debug models, traced the way graph_trainer traces a training step.

A `TitanStep` holds one of torchtitan's graph_trainer models (llama3, qwen3, deepseek_v3
at their `debugmodel` configurations, SDPA attention, float32 on the CPU, random
initialisation: no weights and no data set are read), its loss, one batch of token ids,
and the joint forward + loss + backward graph graph_trainer's own tracer
(`make_fx_tracer.minimal_fx_tracer` over `trainer.make_fwd_bwd_step`) captures from it.
The graph's inputs are the module state (parameters and buffers, in `state_fqns` order)
and then the step's tensors; its outputs are the loss and one gradient per parameter.
"""

import dataclasses

import torch

MODELS = ("llama3", "qwen3", "deepseek_v3")

# Suite sizes: one batch of this shape traces in about a second per model.
DEFAULT_BATCH = 2
DEFAULT_SEQ = 32


def _registry_and_annotation(name):
    # Imported here: torchtitan's import chain costs seconds, and the exporter and the
    # pass worker must stay usable without it.
    if name == "llama3":
        from torchtitan.experiments.graph_trainer.llama3 import model_registry
        from torchtitan.experiments.graph_trainer.llama3.parallelize import annotate_llama as annotate
        return model_registry("debugmodel", attn_backend="sdpa"), annotate
    if name == "qwen3":
        from torchtitan.experiments.graph_trainer.qwen3 import model_registry
        from torchtitan.experiments.graph_trainer.qwen3.parallelize import annotate_qwen3 as annotate
        return model_registry("debugmodel", attn_backend="sdpa"), annotate
    if name == "deepseek_v3":
        from torchtitan.experiments.graph_trainer.deepseek_v3 import model_registry
        from torchtitan.experiments.graph_trainer.deepseek_v3.parallelize import annotate_deepseekv3 as annotate
        return model_registry("debugmodel", attn_backend="sdpa"), annotate
    raise ValueError(f"unknown torchtitan model {name!r}: expected one of {', '.join(MODELS)}")


def build_model(name, seed=0, annotate=True, n_layers=None):
    """torchtitan's `name` debug model on the CPU in float32, initialised from `seed` the
    way torchtitan initialises it (built on meta, materialised, `init_states`).
    n_layers: keep only the config's first n_layers transformer blocks (a smaller model
    for a minimized repro; deepseek_v3's debug model has 1 dense layer, then MoE layers)."""
    spec, annotate_fn = _registry_and_annotation(name)
    config = spec.model
    if n_layers is not None:
        if not 1 <= n_layers <= len(config.layers):
            raise ValueError(f"{name}: n_layers must be in [1, {len(config.layers)}], not {n_layers}")
        config.layers = config.layers[:n_layers]
    torch.manual_seed(seed)
    with torch.device("meta"):
        model = config.build()
    if annotate:
        annotate_fn(model)
    model.to_empty(device="cpu")
    with torch.no_grad():
        model.init_states(buffer_device=None)
    model.train()
    return model, config


def make_loss():
    from torchtitan.components.loss import CrossEntropyLoss
    return CrossEntropyLoss.Config().build()


@dataclasses.dataclass
class TitanStep:
    name: str
    model: torch.nn.Module
    config: object
    loss_fn: object
    step_fn: object  # graph_trainer's fwd_bwd_step(inputs, labels, global_valid_tokens, extra_kwargs)
    args: tuple      # the step's arguments
    traced: object   # graph_trainer's TracedResult
    batch: int
    seq: int
    seed: int
    n_layers: int = None  # build_model's n_layers (None: the debug config's)

    @property
    def gm(self):
        return self.traced.gm

    def flat_inputs(self, model=None):
        """The graph's inputs for `model`'s current state (default: this step's model):
        parameters and buffers in `state_fqns` order, then the step's tensors."""
        model = self.model if model is None else model
        from torchtitan.experiments.graph_trainer.make_fx_tracer import extract_module_state
        state = extract_module_state(model)
        if list(state.keys()) != self.traced.state_fqns:
            raise ValueError("the module's parameters and buffers differ from those the graph was traced with")
        tensors = [a for a in torch.utils._pytree.tree_leaves(self.args) if isinstance(a, torch.Tensor)]
        return list(state.values()) + tensors

    def kinds(self):
        """Input kinds for the exporter: parameters `param`, buffers `buffer`, the rest `arg`."""
        params = {n for n, _ in self.model.named_parameters(remove_duplicate=False)}
        placeholders = [n.name for n in self.gm.graph.nodes if n.op == "placeholder"]
        kinds = {}
        for i, name in enumerate(placeholders):
            if i < len(self.traced.state_fqns):
                kinds[name] = "param" if self.traced.state_fqns[i] in params else "buffer"
            else:
                kinds[name] = "arg"
        return kinds

    def input_names(self):
        """The state FQN of each state input, `input_<i>` for the step's tensors."""
        n_state = len(self.traced.state_fqns)
        count = len([n for n in self.gm.graph.nodes if n.op == "placeholder"])
        return list(self.traced.state_fqns) + [f"step input {i - n_state}" for i in range(n_state, count)]


def trace_step(name, seed=0, batch=DEFAULT_BATCH, seq=DEFAULT_SEQ, prepare_inputs=None, prepare_call_inputs=None,
               model=None, n_layers=None):
    """Build torchtitan's `name` debug model and trace one training step with graph_trainer's
    tracer. `prepare_inputs`/`prepare_call_inputs` are handed to the tracer as graph_trainer's
    trainer hands its pass preparers (the EP chunk pass marks its dynamic dimension so)."""
    from torchtitan.experiments.graph_trainer.make_fx_tracer import minimal_fx_tracer
    from torchtitan.experiments.graph_trainer.trainer import make_fwd_bwd_step
    if model is None:
        model, config = build_model(name, seed, n_layers=n_layers)
    else:
        config = _registry_and_annotation(name)[0].model
    loss_fn = make_loss()
    generator = torch.Generator().manual_seed(seed + 1)
    vocab = config.vocab_size
    tokens = torch.randint(0, vocab, (batch, seq), generator=generator)
    labels = torch.randint(0, vocab, (batch, seq), generator=generator)
    args = (tokens, labels, torch.tensor(float(batch * seq)), {})
    step_fn = make_fwd_bwd_step(model, loss_fn)
    traced = minimal_fx_tracer(step_fn, module=model, prepare_inputs=prepare_inputs,
                               prepare_call_inputs=prepare_call_inputs)(*args)
    return TitanStep(name, model, config, loss_fn, step_fn, args, traced, batch, seq, seed, n_layers)


def run_graph(step, gm=None, model=None):
    """torch's own run of `gm` (default: the traced graph) on `model`'s current state:
    graph_trainer's `run_traced` path (no autograd recording)."""
    gm = step.gm if gm is None else gm
    with torch.no_grad():
        return list(gm(*step.flat_inputs(model)))


def train(step, gm=None, steps=5, lr=1e-3):
    """`steps` optimizer steps (AdamW, graph_trainer's default optimizer) of a copy of the
    step's model: eager (`gm` None: the step function with autograd) or by running `gm`
    and accumulating its gradients as graph_trainer's trainer does. Returns, per step,
    the loss and gradients, and the parameters after the last step."""
    from torchtitan.experiments.graph_trainer.common_utils import accumulate_param_grads_
    # A fresh model from the same seed, not a deepcopy: torchtitan's FQN annotations wrap
    # each submodule's bound forward, which a deepcopy would keep pointing at the original.
    model, _ = build_model(step.name, step.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    params = [p for _, p in model.named_parameters(remove_duplicate=False) if p.requires_grad]
    history = []
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        if gm is None:
            # The step function closes over the step's model: rebind it to this copy.
            from torchtitan.experiments.graph_trainer.trainer import make_fwd_bwd_step
            outputs = make_fwd_bwd_step(model, step.loss_fn)(*step.args)
        else:
            outputs = run_graph(step, gm, model)
        loss, grads = outputs[0], outputs[1:]
        history.append([loss.detach().clone()] + [g.detach().clone() for g in grads])
        accumulate_param_grads_(params, grads)
        optimizer.step()
    return history, [p.detach().clone() for p in model.parameters()]
