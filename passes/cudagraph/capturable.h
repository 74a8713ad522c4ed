// The capturability predicate of the cudagraph pass (specs/distributed.md "CUDA-graph
// wrapper"): whether one node may run inside a captured graph, and if not, which guard
// of the pass refuses it. A captured graph replays the kernels it recorded on the buffers
// it kept, so a node is refused when a replay would not redo what it did: a host scalar
// read from a tensor (baked into the launch), an output shape that depends on the data,
// a copy between host and device from unpinned memory, work that never reaches the
// capture device, a symbolic size, or a write into an input the wrapper copies (the write
// lands in the kept buffer, not in the caller's tensor).
#pragma once

#include "framework/ir/graph.h"
#include "framework/ir/module.h"

#include <unordered_set>

namespace passcheck::passes {

/// What the predicate needs to know about the graph a node belongs to.
struct CaptureContext {
  /// The device the captured work runs on: CUDA for backend=cuda; for backend=replay the
  /// device of the part's tensors.
  c10::Device device = c10::Device(c10::DeviceType::CPU);
  /// Values the wrapper copies into its kept buffers (part inputs that are not static,
  /// and values an eager neighbour produces): writes into them are lost.
  std::unordered_set<const ir::Value*> copied;
  /// Non-tensor values computed from a data-dependent scalar (an item and the scalar
  /// arithmetic on it), found by CaptureContext::of.
  std::unordered_set<const ir::Value*> data_dependent;
  /// Tensors whose shape depends on tensor data: outputs of an op with a data-dependent
  /// output shape (nonzero), and the non-scalar tensors computed from them, found by
  /// CaptureContext::of. A captured graph replays the shapes it recorded, so a node
  /// reading one is refused like the op itself.
  std::unordered_set<const ir::Value*> dynamic_shape;
  /// Take aten::_grouped_mm as capturable whatever its dtype (the injectable bug
  /// grouped-mm-always-capturable of the cudagraph pass).
  bool grouped_mm_always_capturable = false;
  /// Capture the consumers of a data-dependent shape (the injectable bug
  /// captures-dynamic-shape-consumers: the pass as it was before generated eager islands
  /// showed a replay refused for a shape it had not recorded).
  bool dynamic_shape_consumers_capturable = false;

  /// The context of `graph` under `backend`, with `copied` as above and the
  /// data-dependent scalars found by walking the graph once.
  static CaptureContext of(const ir::Graph& graph, ir::CaptureSpec::Backend backend,
                           std::unordered_set<const ir::Value*> copied);
};

/// The capture device a graph gets under `backend` (see CaptureContext::device): the
/// device of its first tensor input or tensor value for `replay`, CPU when it has none.
c10::Device capture_device(const ir::Graph& graph, ir::CaptureSpec::Backend backend);

/// The name of the guard that keeps `node` out of a captured graph ("data-dependent-scalar",
/// "data-dependent-shape", "symbolic-size", "host-device-copy", "host-only-op",
/// "mutates-copied-input"), or nullptr when it is capturable.
const char* why_not_capturable(const ir::Node& node, const CaptureContext& ctx);

/// why_not_capturable() without its last check, "mutates-copied-input": every refusal
/// that does not depend on which values are copied (the cudagraph pass decides those
/// once per node and only re-checks the copies as they grow).
const char* why_not_capturable_but_copies(const ir::Node& node, const CaptureContext& ctx);
/// The check why_not_capturable_but_copies() leaves out: the node writes (a view of) a
/// value in ctx.copied.
bool writes_copied_input(const ir::Node& node, const CaptureContext& ctx);
/// Whether part `p`'s input `i` keeps its address from call to call, so the wrapper keeps
/// it static: module state (parameters and buffers), or an output of an earlier captured
/// part. Every other input is copied into the wrapper's kept buffer.
bool has_fixed_address(const ir::Module& module, size_t p, size_t i);

/// True when `node` launches device work: it writes memory, is a collective, or has a
/// tensor output that is not a view of an input. Views, reshapes and scalar plumbing
/// launch nothing, so a captured graph of only those is not worth its buffers.
bool launches_work(const ir::Node& node);

}  // namespace passcheck::passes
