// The passcheck IR: a Graph is an ordered list of Nodes in SSA form. Each Node names an
// ATen operator overload ("aten::mm", "aten::split.Tensor"), holds its schema arguments
// as a tree of constants and value references (Arg), and defines one or more output
// Values. Values keep their use lists, so replace-all-uses costs O(uses); nodes live in
// an intrusive list, so insertion and erasure cost O(1). Depends on c10 only.
#pragma once

#include "framework/ir/meta.h"
#include "framework/ir/name_index.h"
#include "framework/ir/sym_claim.h"

#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/util/SmallVector.h>
#include <c10/util/flat_hash_map.h>

#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace passcheck::ir {

class Graph;
class Node;
class Value;

/// What a change did to a node, as bits of Node::touched() (framework/check's incremental
/// verifier re-checks exactly what these name).
enum TouchBits : uint8_t {
  kTouchCreated = 1,  ///< the node is new
  kTouchArgs = 2,     ///< its arguments or an operand changed
  kTouchMeta = 4,     ///< its NodeMeta was handed out for writing
  kTouchMoved = 8,    ///< it moved in the list
  kTouchOutputs = 16, ///< an output was added, renamed, or got new metadata or placements
  kTouchUses = 32,    ///< the use list of one of its outputs changed
};

/// What a change did to the graph itself, as bits of Graph::graph_changes().
enum GraphChangeBits : uint8_t {
  kGraphInputs = 1,     ///< an input was added, or an input's metadata, placements or name changed
  kGraphInputUses = 2,  ///< the use list of an input changed
  kGraphOutputs = 4,    ///< an output was added or replaced
  kGraphSymbols = 8,    ///< symbols or claims may have changed
  kGraphMesh = 16,      ///< the mesh changed
  kGraphSubgraphs = 32, ///< a subgraph was added or removed
};

/// Kind of data a Value holds at run time.
enum class ValueType : uint8_t { Tensor, Int, Float, Bool, None };
/// Where a graph input comes from: module state (lifted by FQN) or a user argument.
enum class InputRole : uint8_t { Parameter, Buffer, Argument };

const char* to_string(ValueType type);
const char* to_string(InputRole role);

/// One use of a Value: operand slot `slot` of `user`, or graph output `slot` when
/// `user` is null.
struct Use {
  Node* user = nullptr;
  uint32_t slot = 0;
  bool is_graph_output() const { return user == nullptr; }
  bool operator==(const Use& o) const { return user == o.user && slot == o.slot; }
};

/// A value's uses. A pointer and two 32-bit counts (a std::vector takes three words): a
/// million-node graph holds one per value.
using UseList = c10::SmallVector<Use, 0>;

/// A node's outputs: most nodes have one, kept in the node instead of an allocation.
using NodeOutputs = c10::SmallVector<Value*, 1>;

/// A position in the text a graph was parsed from (line 0: not parsed).
struct SourcePos {
  int line = 0;
  int column = 0;
};

struct ArgPayload;

/// A schema argument: a constant, a reference to a Value, or a list of those.
///
/// A graph holds a few million of these in its nodes' argument lists, most of them value
/// references and small constants: the small fields share the first word, an Int and a
/// Float share storage (kind says which one is set), and a string, a list or a symbolic
/// expression lives out of line, so an argument is 32 bytes.
struct Arg {
  enum class Kind : uint8_t { None, Bool, Int, Float, String, Dtype, Device, Layout, MemoryFormat, Value, List, Sym };
  Kind kind = Kind::None;
  bool b = false;
  c10::Device device = c10::Device(c10::DeviceType::CPU);
  union {
    int64_t i = 0;  // Int; also the enum value for Dtype, Layout and MemoryFormat
    double f;       // Float
  };
  Value* value = nullptr;

  Arg() = default;
  Arg(const Arg& other);
  Arg(Arg&& other) noexcept;
  Arg& operator=(const Arg& other);
  Arg& operator=(Arg&& other) noexcept;
  ~Arg();

  /// String: its text; empty for other kinds.
  const std::string& str() const;
  /// List: its items; empty for other kinds.
  const std::vector<Arg>& list() const;
  /// The items of a List, to rewrite in place (an Arg of another kind becomes an empty List).
  std::vector<Arg>& mutable_list();
  /// Sym: an integer that depends on the graph's symbols; a default expression for other kinds.
  const sym::Expr& expr() const;

  static Arg none() { return Arg{}; }
  static Arg boolean(bool v);
  static Arg integer(int64_t v);
  static Arg real(double v);
  static Arg string(std::string v);
  static Arg dtype(c10::ScalarType v);
  static Arg dev(c10::Device v);
  static Arg layout(c10::Layout v);
  static Arg memory_format(c10::MemoryFormat v);
  static Arg of(Value* v);
  static Arg of_list(std::vector<Arg> items);
  static Arg int_list(const std::vector<int64_t>& items);
  /// A symbolic integer; a constant expression gives a plain Int.
  static Arg symbolic(const sym::Expr& e);
  /// Int or Sym as an expression; nullopt for other kinds.
  std::optional<sym::Expr> as_int_expr() const;

  bool is_value() const { return kind == Kind::Value; }
  bool is_symbolic() const { return kind == Kind::Sym; }
  /// True when this argument or an item of it is symbolic.
  bool has_symbols() const;
  /// Calls fn on every symbolic integer in this argument tree.
  void for_each_symbolic(const std::function<void(const sym::Expr&)>& fn) const;
  bool is_none() const { return kind == Kind::None; }
  c10::ScalarType as_dtype() const { return static_cast<c10::ScalarType>(i); }
  /// Structural equality; Value references compare by identity.
  bool operator==(const Arg& o) const;
  bool operator!=(const Arg& o) const { return !(*this == o); }
  /// Calls fn on every Value referenced by this argument tree, in order.
  void for_each_value(const std::function<void(Value*)>& fn) const;

 private:
  std::unique_ptr<ArgPayload> payload_;  // String, List and Sym only
};

/// What a String, List or Sym argument holds (the one its kind names).
struct ArgPayload {
  std::string str;
  std::vector<Arg> list;
  sym::Expr expr;

  static const ArgPayload& empty();  // out of line: the pass libraries hold no statics
};

inline Arg::Arg(Arg&& other) noexcept = default;
inline Arg& Arg::operator=(Arg&& other) noexcept = default;
inline Arg::~Arg() = default;
inline Arg::Arg(const Arg& other)
    : kind(other.kind), b(other.b), device(other.device), i(other.i), value(other.value),
      payload_(other.payload_ ? std::make_unique<ArgPayload>(*other.payload_) : nullptr) {}
inline Arg& Arg::operator=(const Arg& other) {
  if (this != &other) *this = Arg(other);
  return *this;
}
inline const std::string& Arg::str() const { return (payload_ ? *payload_ : ArgPayload::empty()).str; }
inline const std::vector<Arg>& Arg::list() const { return (payload_ ? *payload_ : ArgPayload::empty()).list; }
inline const sym::Expr& Arg::expr() const { return (payload_ ? *payload_ : ArgPayload::empty()).expr; }

class Value {
 public:
  const std::string& name() const { return name_; }
  /// The node defining this value; null for graph inputs.
  Node* producer() const { return producer_; }
  size_t output_index() const { return output_index_; }
  bool is_graph_input() const { return producer_ == nullptr; }
  InputRole role() const { return role_; }
  ValueType type() const { return type_; }
  const std::optional<TensorMeta>& meta() const { return meta_; }
  void set_meta(std::optional<TensorMeta> meta);
  /// Placement on each dim of the graph's mesh (empty: none recorded).
  const std::vector<Placement>& placements() const { return placements_ ? *placements_ : no_placements(); }
  void set_placements(std::vector<Placement> placements);
  const UseList& uses() const { return uses_; }
  bool has_uses() const { return !uses_.empty(); }
  Graph* graph() const { return graph_; }
  /// Rewires every use (node operands and graph outputs) to `other`.
  void replace_all_uses_with(Value* other);
  /// Rewires the uses for which `pred` holds.
  void replace_uses_if(Value* other, const std::function<bool(const Use&)>& pred);

  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;

 private:
  friend class Graph;
  friend class Node;
  Value(Graph* g, Node* producer, size_t index, ValueType type, std::optional<TensorMeta> meta)
      : graph_(g),
        producer_(producer),
        output_index_(static_cast<uint32_t>(index)),
        type_(type),
        meta_(std::move(meta)) {}
  static const std::vector<Placement>& no_placements();
  void remove_use(const Use& use);
  /// Records in the graph's change log that this value's declaration changed
  /// (kTouchOutputs / kGraphInputs) or its use list did (kTouchUses / kGraphInputUses).
  void touch_declaration();
  void touch_uses();

  // What adding a use reads and writes (the graph check, the use list, the producer to
  // log) shares the first cache line: a graph of a million nodes is out of cache.
  Graph* graph_;
  Node* producer_;
  UseList uses_;
  uint32_t output_index_;  // Node::add_output refuses a node of more outputs
  ValueType type_;
  InputRole role_ = InputRole::Argument;
  std::string name_;
  std::optional<TensorMeta> meta_;
  // Only graphs on a device mesh record placements: null instead of an empty vector keeps
  // a value of a million-node graph within a smaller allocation.
  std::unique_ptr<std::vector<Placement>> placements_;

 public:
  /// Where the value's declaration (`%name : type`) starts in the text it was parsed
  /// from; 0 when not parsed. Lets later checks name file:line:col.
  int source_line = 0;
  int source_column = 0;
};

class Node {
 public:
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  /// Qualified operator with overload: "aten::mm", "aten::split.Tensor". The string is the
  /// process's one copy of that name (intern_operator): two nodes' op() are equal exactly
  /// when they are the same object, and reading it costs no cache miss per node.
  const std::string& op() const { return *op_; }
  /// Operator name without the overload: "aten::split".
  std::string op_name() const;
  /// Overload name, empty for the default overload.
  std::string overload() const;
  /// Operator name without namespace and overload: "split".
  std::string op_base() const;

  const std::vector<Arg>& args() const { return args_; }
  const Arg& arg(size_t i) const { return args_.at(i); }
  size_t num_args() const { return args_.size(); }
  void set_args(std::vector<Arg> args);
  void set_arg(size_t i, Arg arg);

  /// Value operands in argument order (repeats kept); slot i is operand(i).
  size_t num_operands() const { return slots_.size(); }
  Value* operand(size_t slot) const {
    if (slot >= slots_.size())
      throw std::out_of_range("operand slot " + std::to_string(slot) + " of a node with " +
                              std::to_string(slots_.size()));
    return slots_[slot]->value;
  }
  std::vector<Value*> operands() const;
  void replace_operand(size_t slot, Value* v);

  const NodeOutputs& outputs() const { return outputs_; }
  Value* output(size_t i = 0) const {
    if (i >= outputs_.size())
      throw std::out_of_range("output " + std::to_string(i) + " of a node with " + std::to_string(outputs_.size()));
    return outputs_[i];
  }
  size_t num_outputs() const { return outputs_.size(); }
  Value* add_output(ValueType type, std::optional<TensorMeta> meta, const std::string& name_hint = "");
  bool has_users() const;

  const NodeMeta& meta() const { return meta_ ? *meta_ : default_meta(); }
  /// The metadata for writing: records the node as touched (kTouchMeta), so the gate
  /// re-verifies it. Read through meta().
  NodeMeta& mutable_meta();
  /// TouchBits of what changed since the graph's change log was last cleared (0: nothing).
  uint8_t touched() const { return touched_; }

  Node* next() const { return next_; }
  Node* prev() const { return prev_; }
  Graph* graph() const { return graph_; }
  /// True when this node comes strictly before `other` in the graph. O(1).
  bool is_before(const Node* other) const { return order_ < other->order_; }
  void move_before(Node* anchor);
  void move_after(Node* anchor);


 private:
  friend class Graph;
  friend class Value;
  Node(Graph* g, const std::string* op) : graph_(g), op_(op) {}
  static const NodeMeta& default_meta();  // out of line: the pass libraries hold no statics
  void rebuild_slots();
  void drop_uses();

  // What every walk reads (list links, order, operator, operands, outputs) and what the
  // change log writes come first: two cache lines of a node hold them.
  Graph* graph_;
  const std::string* op_;  // interned (intern_operator)
  Node* prev_ = nullptr;
  Node* next_ = nullptr;
  int64_t order_ = 0;
  uint8_t touched_ = 0;
  uint32_t touched_slot_ = 0;  // index in the graph's touched list while touched_ != 0
  // Pointers into args_ for every Value reference; most nodes have one or two, kept in
  // the node instead of an allocation of their own.
  c10::SmallVector<Arg*, 2> slots_;
  NodeOutputs outputs_;  // owned
  std::vector<Arg> args_;
  // Null while the metadata is the default one (most nodes of a large graph): a node of
  // a million-node graph then fits a smaller allocation. mutable_meta() creates it.
  std::unique_ptr<NodeMeta> meta_;
  // Where the operator and then each top-level argument were parsed from: a range of the
  // graph's source_positions_ (empty when not parsed).
  uint32_t source_at_ = 0;
  uint32_t source_count_ = 0;
  // Pads a node into the allocator's 192-byte size class, which no other IR object uses:
  // in the 160-byte class with values, the nodes a walk visits lay interleaved with values
  // (twice the pages per node walked; a node-list scan at 10^6 nodes ran up to 1.5x slower).
  char size_class_padding_[24] = {};

 public:
  /// Line and column of the node in the text it was parsed from (0 when not parsed).
  int source_line = 0;
  int source_column = 0;
  /// Where the operator name was parsed from (line 0 when not parsed).
  SourcePos source_op() const;
  /// Where each top-level argument was parsed from (none when not parsed), so argument
  /// errors can point at `file:line:col`. Valid until the graph's next set_source.
  std::span<const SourcePos> source_args() const;
  void set_source(SourcePos op, std::span<const SourcePos> args);
};

/// The one copy of the operator name `op` this process keeps: every node points at it
/// instead of owning a string (a graph names a few hundred operators over a million nodes).
/// Thread-safe; the strings live as long as the process.
const std::string* intern_operator(std::string_view op);

/// Thrown on misuse of the IR API (erasing a used node, unknown value, ...).
class IrError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  /// Deep copy: same names, metadata and order.
  std::unique_ptr<Graph> clone() const;

  Value* add_input(const std::string& name, ValueType type, std::optional<TensorMeta> meta,
                   InputRole role = InputRole::Argument);
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  void add_output(Value* v);
  void set_output(size_t i, Value* v);
  /// Removes every graph output (their uses go with them).
  void clear_outputs();

  /// Creates a node (outputs are added by the caller) before `insert_before`, or at
  /// the end when it is null.
  Node* create(std::string_view op, std::vector<Arg> args, Node* insert_before = nullptr);
  /// Copies `src` (args remapped through `map`, outputs with the same types, metadata
  /// and `name_suffix` appended to output names) before `insert_before`.
  Node* clone_node(const Node& src, const std::function<Value*(Value*)>& map,
                   Node* insert_before = nullptr, const std::string& name_suffix = "");
  /// Erases a node whose outputs have no uses.
  void erase(Node* node);
  /// Moves `node` with its output values from its graph to this one, before
  /// `insert_before` (at the end when null), without copying: pointers to the node and its
  /// outputs stay valid. Each operand is rewired to map(operand), which must be a value of
  /// this graph or the operand itself when its producer moves here too (before or after).
  /// The outputs keep their uses: nodes of the source graph reading them must move too or
  /// be erased, and an output of the source graph is refused (IrError; clear_outputs()
  /// first). Output names are registered here (suffixed on a collision) and forgotten
  /// there. A partitioner that consumes its joint graph moves each node once this way
  /// instead of cloning it and freeing the original.
  Node* adopt(Node* node, const std::function<Value*(Value*)>& map, Node* insert_before = nullptr);

  Node* first_node() const { return head_; }
  Node* last_node() const { return tail_; }
  size_t num_nodes() const { return num_nodes_; }
  /// Nodes in order, snapshotted: erasing while iterating the result is safe.
  std::vector<Node*> node_list() const;

  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Node*;
    using difference_type = std::ptrdiff_t;
    using pointer = Node**;
    using reference = Node*;
    explicit Iterator(Node* n) : node_(n), next_(n ? n->next() : nullptr) {}
    Node* operator*() const { return node_; }
    Iterator& operator++() {
      node_ = next_;
      next_ = node_ ? node_->next() : nullptr;
      return *this;
    }
    bool operator!=(const Iterator& o) const { return node_ != o.node_; }
    bool operator==(const Iterator& o) const { return node_ == o.node_; }

   private:
    Node* node_;
    Node* next_;  // cached, so the current node may be erased
  };
  struct Range {
    Node* first;
    Iterator begin() const { return Iterator(first); }
    Iterator end() const { return Iterator(nullptr); }
  };
  Range nodes() const { return Range{head_}; }

  /// A fresh value name derived from `base` (sanitized, suffixed "_N" on collision).
  std::string unique_name(const std::string& base);
  void rename(Value* v, const std::string& name);
  /// Value by name, or null.
  Value* find_value(std::string_view name) const;

  /// Symbols the graph's shapes and integer arguments are expressed in.
  const std::vector<sym::Symbol>& symbols() const { return symbols_; }
  /// Declares a symbol; throws IrError when the name is taken.
  void add_symbol(const sym::Symbol& symbol);
  void remove_symbol(const std::string& name);
  const sym::Symbol* find_symbol(const std::string& name) const;
  /// Symbol name -> hint.
  std::map<std::string, int64_t> symbol_hints() const;
  /// Claims (guards) passes recorded about the symbols, checked by framework/sym/prover.h.
  const std::vector<sym::Claim>& claims() const { return claims_; }
  std::vector<sym::Claim>& mutable_claims() {
    graph_changes_ |= kGraphSymbols;
    return claims_;
  }
  void add_claim(sym::Claim claim) {
    graph_changes_ |= kGraphSymbols;
    claims_.push_back(std::move(claim));
  }

  /// The mesh and rank of a per-rank distributed graph (none for a single-rank graph).
  const std::optional<MeshInfo>& mesh() const { return mesh_; }
  void set_mesh(std::optional<MeshInfo> mesh) {
    graph_changes_ |= kGraphMesh;
    mesh_ = std::move(mesh);
  }

  /// Subgraphs called by `passcheck::invoke_subgraph` nodes (framework/ir/subgraph.h),
  /// by name. They live in the top graph's table, share its symbols and may call each
  /// other (never recursively); a subgraph's own table stays empty.
  const std::map<std::string, std::unique_ptr<Graph>>& subgraphs() const { return subgraphs_; }
  bool has_subgraphs() const { return !root()->subgraphs_.empty(); }
  /// Adds a subgraph to the top graph's table; throws IrError when the name is taken.
  Graph* add_subgraph(const std::string& name, std::unique_ptr<Graph> body);
  /// The subgraph called `name` in the top graph's table, or null.
  Graph* find_subgraph(const std::string& name) const;
  /// Removes a subgraph (callers must be gone); returns whether it existed.
  bool remove_subgraph(const std::string& name);
  /// The graph owning this subgraph's table entry, or this graph when it is the top.
  const Graph* root() const { return owner_ ? owner_->root() : this; }
  Graph* root() { return owner_ ? owner_->root() : this; }
  /// The subgraph's name; empty for a top graph.
  const std::string& subgraph_name() const { return subgraph_name_; }

  /// Text form (framework/ir/text.h).
  std::string print() const;
  /// The file (or name) the graph was parsed from; empty when built in code.
  std::string source_name;
  /// Hash of what the text form says, computed from the graph without printing it:
  /// graphs with equal text hash equally (framework/ir/graph_hash.cpp).
  uint64_t hash() const;
  /// hash() without the nodes' metadata (phase, FQN, seq_nr, recompute policy, AC region,
  /// custom keys, wanted placements) and without value names (a value is known by its
  /// position: inputs, then every node's outputs in order): graphs that compute the same
  /// thing in the same order hash equally, however their values are named.
  uint64_t computation_hash() const;
  /// hash() without value names (positions instead), metadata included. A pass whose
  /// result changes this one but not computation_hash() changed metadata only; one that
  /// changes neither changed names at most.
  uint64_t unnamed_hash() const;

  /// The change log: every node touched since clear_changes() (TouchBits on each; an
  /// entry is null once its node was erased), and the GraphChangeBits of changes to the
  /// graph itself. Every mutation through this API is recorded; the gate verifies only
  /// what a pass touched (framework/check/verifier.h, verify_changes).
  const std::vector<Node*>& touched_nodes() const { return touched_nodes_; }
  uint8_t graph_changes() const { return graph_changes_; }
  /// Starts a new log: O(nodes touched since the last call).
  void clear_changes();

 private:
  friend class Node;
  friend class Value;
  uint64_t hash_of(bool with_meta, bool with_names) const;
  Node* create_interned(const std::string* op, std::vector<Arg> args, Node* insert_before);
  void link_before(Node* node, Node* anchor);
  void unlink(Node* node);
  void assign_order(Node* node);
  void renumber();
  void register_name(Value* v, const std::string& hint);
  void forget_name(Value* v);
  void touch(Node* node, uint8_t bits) {
    if (node->touched_ == 0) {
      node->touched_slot_ = static_cast<uint32_t>(touched_nodes_.size());
      touched_nodes_.push_back(node);
    }
    node->touched_ |= bits;
  }

  std::vector<std::unique_ptr<Value>> input_storage_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  Node* head_ = nullptr;
  Node* tail_ = nullptr;
  size_t num_nodes_ = 0;
  NameIndex names_;  // keys view each value's own name_ (a rename or an erase takes it out first)
  std::unordered_map<std::string, int64_t> name_counters_;
  std::vector<sym::Symbol> symbols_;
  std::vector<sym::Claim> claims_;
  std::optional<MeshInfo> mesh_;
  std::map<std::string, std::unique_ptr<Graph>> subgraphs_;
  // Every parsed node's operator and argument positions, one array per graph instead of a
  // vector per node (Node::source_op, Node::source_args).
  std::vector<SourcePos> source_positions_;
  Graph* owner_ = nullptr;
  std::string subgraph_name_;
  std::vector<Node*> touched_nodes_;
  // Nodes of the graph created since clear_changes(). While it equals num_nodes_ (a graph
  // being built: parsed, cloned, traced), every node is re-verified whole, so a use added
  // to a value need not mark its producer: a cache miss per operand and output saved.
  size_t created_in_log_ = 0;
  uint8_t graph_changes_ = 0;
};

/// Moves a graph from one device to another: every Device argument and every
/// TensorMeta device equal to `from` becomes `to` (used after tracing on meta).
/// Returns how many arguments and metas changed.
size_t retarget_device(Graph& graph, c10::Device from, c10::Device to);

}  // namespace passcheck::ir
