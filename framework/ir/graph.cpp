// Graph, Node and Value: ownership, use lists, ordering and naming.
#include "framework/ir/graph.h"

#include "framework/ir/text.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <mutex>
#include <unordered_set>

namespace passcheck::ir {

const char* to_string(ValueType type) {
  switch (type) {
    case ValueType::Tensor: return "Tensor";
    case ValueType::Int: return "int";
    case ValueType::Float: return "float";
    case ValueType::Bool: return "bool";
    case ValueType::None: return "None";
  }
  return "?";
}

const char* to_string(InputRole role) {
  switch (role) {
    case InputRole::Parameter: return "param";
    case InputRole::Buffer: return "buffer";
    case InputRole::Argument: return "arg";
  }
  return "?";
}

// A million-node graph is a few million of these objects, and at that size building one
// costs what its memory costs to fault in (docs/performance.md, "A million nodes"): each
// fits the allocator's size class it was laid out for. Checked where the layout is known.
#if defined(__x86_64__) && defined(__GLIBCXX__)
static_assert(sizeof(Arg) == 32, "Arg outgrew its 32 bytes");
static_assert(sizeof(Value) <= 160, "Value outgrew the 160-byte size class");
static_assert(sizeof(Node) > 160 && sizeof(Node) <= 192, "Node left the 192-byte size class it has alone");
#endif

// ---- Arg ----------------------------------------------------------------------------

Arg Arg::boolean(bool v) { Arg a; a.kind = Kind::Bool; a.b = v; return a; }
Arg Arg::integer(int64_t v) { Arg a; a.kind = Kind::Int; a.i = v; return a; }
Arg Arg::real(double v) { Arg a; a.kind = Kind::Float; a.f = v; return a; }
Arg Arg::string(std::string v) {
  Arg a;
  a.kind = Kind::String;
  a.payload_ = std::make_unique<ArgPayload>();
  a.payload_->str = std::move(v);
  return a;
}
Arg Arg::dtype(c10::ScalarType v) { Arg a; a.kind = Kind::Dtype; a.i = static_cast<int64_t>(v); return a; }
Arg Arg::dev(c10::Device v) { Arg a; a.kind = Kind::Device; a.device = v; return a; }
Arg Arg::layout(c10::Layout v) { Arg a; a.kind = Kind::Layout; a.i = static_cast<int64_t>(v); return a; }
Arg Arg::memory_format(c10::MemoryFormat v) { Arg a; a.kind = Kind::MemoryFormat; a.i = static_cast<int64_t>(v); return a; }
Arg Arg::of(Value* v) { Arg a; a.kind = Kind::Value; a.value = v; return a; }
Arg Arg::of_list(std::vector<Arg> items) {
  Arg a;
  a.kind = Kind::List;
  a.payload_ = std::make_unique<ArgPayload>();
  a.payload_->list = std::move(items);
  return a;
}

Arg Arg::int_list(const std::vector<int64_t>& items) {
  std::vector<Arg> list;
  list.reserve(items.size());
  for (int64_t v : items) list.push_back(integer(v));
  return of_list(std::move(list));
}

const ArgPayload& ArgPayload::empty() {
  static const ArgPayload none;
  return none;
}

std::vector<Arg>& Arg::mutable_list() {
  if (kind != Kind::List) throw IrError("mutable_list: the argument is not a list");
  if (!payload_) payload_ = std::make_unique<ArgPayload>();
  return payload_->list;
}

Arg Arg::symbolic(const sym::Expr& e) {
  if (auto c = e.as_constant()) return integer(*c);
  Arg a;
  a.kind = Kind::Sym;
  a.payload_ = std::make_unique<ArgPayload>();
  a.payload_->expr = e;
  return a;
}

std::optional<sym::Expr> Arg::as_int_expr() const {
  if (kind == Kind::Int) return sym::Expr::constant(i);
  if (kind == Kind::Sym) return expr();
  return std::nullopt;
}

bool Arg::has_symbols() const {
  bool found = false;
  for_each_symbolic([&](const sym::Expr&) { found = true; });
  return found;
}

void Arg::for_each_symbolic(const std::function<void(const sym::Expr&)>& fn) const {
  if (kind == Kind::Sym) fn(expr());
  else if (kind == Kind::List)
    for (const Arg& a : list()) a.for_each_symbolic(fn);
}

bool Arg::operator==(const Arg& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::None: return true;
    case Kind::Bool: return b == o.b;
    case Kind::Int:
    case Kind::Dtype:
    case Kind::Layout:
    case Kind::MemoryFormat: return i == o.i;
    // Bitwise: -0.0 differs from 0.0 and NaN equals the same NaN, as in the text form.
    case Kind::Float: return std::memcmp(&f, &o.f, sizeof f) == 0;
    case Kind::String: return str() == o.str();
    case Kind::Device: return device == o.device;
    case Kind::Value: return value == o.value;
    case Kind::List: return list() == o.list();
    case Kind::Sym: return expr() == o.expr();
  }
  return false;
}

void Arg::for_each_value(const std::function<void(Value*)>& fn) const {
  if (kind == Kind::Value) fn(value);
  else if (kind == Kind::List)
    for (const Arg& a : list()) a.for_each_value(fn);
}

// ---- Value --------------------------------------------------------------------------

void Value::remove_use(const Use& use) {
  auto it = std::find(uses_.begin(), uses_.end(), use);
  if (it == uses_.end()) throw IrError("internal: use of %" + name_ + " not found");
  *it = uses_.back();
  uses_.pop_back();
  touch_uses();
}

void Value::touch_declaration() {
  if (producer_) graph_->touch(producer_, kTouchOutputs);
  else graph_->graph_changes_ |= kGraphInputs;
}

void Value::touch_uses() {
  if (!producer_) graph_->graph_changes_ |= kGraphInputUses;
  else if (graph_->created_in_log_ != graph_->num_nodes_) graph_->touch(producer_, kTouchUses);
}

void Value::set_meta(std::optional<TensorMeta> meta) {
  meta_ = std::move(meta);
  touch_declaration();
}

void Value::set_placements(std::vector<Placement> placements) {
  if (placements.empty()) placements_.reset();
  else placements_ = std::make_unique<std::vector<Placement>>(std::move(placements));
  touch_declaration();
}

const std::vector<Placement>& Value::no_placements() {
  static const std::vector<Placement> none;
  return none;
}

void Value::replace_all_uses_with(Value* other) {
  replace_uses_if(other, [](const Use&) { return true; });
}

void Value::replace_uses_if(Value* other, const std::function<bool(const Use&)>& pred) {
  if (other == this) return;
  UseList keep;
  std::vector<Use> moved;
  for (const Use& u : uses_) {
    if (pred(u)) moved.push_back(u);
    else keep.push_back(u);
  }
  if (moved.empty()) return;
  uses_ = std::move(keep);
  touch_uses();
  other->touch_uses();
  for (const Use& u : moved) {
    if (u.is_graph_output()) {
      graph_->outputs_[u.slot] = other;
      graph_->graph_changes_ |= kGraphOutputs;
    } else {
      u.user->slots_[u.slot]->value = other;
      graph_->touch(u.user, kTouchArgs);
    }
    other->uses_.push_back(u);
  }
}

// ---- Node ---------------------------------------------------------------------------

Node::~Node() {
  for (Value* v : outputs_) delete v;
}

const std::string* intern_operator(std::string_view op) {
  // A per-thread direct-mapped cache in front of the shared table: building a graph asks
  // for the same few hundred names over and over, and then pays a hash and a compare
  // instead of a lock.
  constexpr size_t kRecent = 256;
  thread_local const std::string* recent[kRecent] = {};
  const size_t hash = std::hash<std::string_view>{}(op);
  const std::string*& cached = recent[hash & (kRecent - 1)];
  if (cached != nullptr && *cached == op) return cached;
  static std::mutex mutex;
  static std::unordered_set<std::string> names;  // node-based: an element never moves
  std::lock_guard<std::mutex> lock(mutex);
  cached = &*names.emplace(op).first;
  return cached;
}

NodeMeta& Node::mutable_meta() {
  graph_->touch(this, kTouchMeta);
  if (!meta_) meta_ = std::make_unique<NodeMeta>();
  return *meta_;
}

SourcePos Node::source_op() const {
  return source_count_ ? graph_->source_positions_[source_at_] : SourcePos{};
}

const NodeMeta& Node::default_meta() {
  static const NodeMeta empty;
  return empty;
}

std::span<const SourcePos> Node::source_args() const {
  if (source_count_ == 0) return {};
  return std::span<const SourcePos>(graph_->source_positions_).subspan(source_at_ + 1, source_count_ - 1);
}

void Node::set_source(SourcePos op, std::span<const SourcePos> args) {
  std::vector<SourcePos>& pool = graph_->source_positions_;
  if (pool.size() + args.size() + 1 > UINT32_MAX) throw IrError("more source positions than a graph can record");
  // Positions read from this graph's own array are copied first: growing it moves them.
  std::vector<SourcePos> copied;
  if (!args.empty() && args.data() >= pool.data() && args.data() < pool.data() + pool.size()) {
    copied.assign(args.begin(), args.end());
    args = copied;
  }
  source_at_ = static_cast<uint32_t>(pool.size());
  source_count_ = static_cast<uint32_t>(args.size() + 1);
  pool.push_back(op);
  pool.insert(pool.end(), args.begin(), args.end());
}

std::string Node::op_name() const {
  auto dot = op_->find('.');
  return dot == std::string::npos ? *op_ : op_->substr(0, dot);
}

std::string Node::overload() const {
  auto dot = op_->find('.');
  return dot == std::string::npos ? std::string() : op_->substr(dot + 1);
}

std::string Node::op_base() const {
  std::string name = op_name();
  auto colon = name.rfind("::");
  return colon == std::string::npos ? name : name.substr(colon + 2);
}

std::vector<Value*> Node::operands() const {
  std::vector<Value*> out;
  out.reserve(slots_.size());
  for (Arg* a : slots_) out.push_back(a->value);
  return out;
}

void Node::drop_uses() {
  for (size_t i = 0; i < slots_.size(); ++i) slots_[i]->value->remove_use(Use{this, static_cast<uint32_t>(i)});
}

namespace {
// Runs before a node's arguments change, so that a rejected argument list leaves the
// node and every use list exactly as they were.
// Plain recursion, no std::function: every node of a parsed or cloned graph comes here.
void check_value_arg(const Arg& arg, const Graph* graph, const std::string& op) {
  if (arg.kind == Arg::Kind::Value) {
    if (arg.value == nullptr) throw IrError("node " + op + ": argument references a null value");
    if (arg.value->graph() != graph)
      throw IrError("node " + op + ": argument %" + arg.value->name() + " belongs to another graph");
  } else if (arg.kind == Arg::Kind::List) {
    for (const Arg& e : arg.list()) check_value_arg(e, graph, op);
  }
}

void check_value_args(const std::vector<Arg>& args, const Graph* graph, const std::string& op) {
  for (const Arg& arg : args) check_value_arg(arg, graph, op);
}

void collect_slots(Arg& a, c10::SmallVectorImpl<Arg*>& slots) {
  if (a.kind == Arg::Kind::Value) slots.push_back(&a);
  else if (a.kind == Arg::Kind::List)
    for (Arg& e : a.mutable_list()) collect_slots(e, slots);
}

size_t count_slots(const Arg& a) {
  if (a.kind == Arg::Kind::Value) return 1;
  size_t n = 0;
  if (a.kind == Arg::Kind::List)
    for (const Arg& e : a.list()) n += count_slots(e);
  return n;
}
}  // namespace

// Arguments must have passed check_value_args.
void Node::rebuild_slots() {
  slots_.clear();
  size_t slots = 0;
  for (const Arg& a : args_) slots += count_slots(a);
  slots_.reserve(slots);  // exactly: a graph holds a million of these
  for (Arg& a : args_) collect_slots(a, slots_);
  for (size_t i = 0; i < slots_.size(); ++i) {
    Value* v = slots_[i]->value;
    v->uses_.push_back(Use{this, static_cast<uint32_t>(i)});
    v->touch_uses();
  }
  graph_->touch(this, kTouchArgs);
}

void Node::set_args(std::vector<Arg> args) {
  check_value_args(args, graph_, *op_);
  drop_uses();
  args_ = std::move(args);
  rebuild_slots();
}

void Node::set_arg(size_t i, Arg arg) {
  std::vector<Arg> args = args_;
  if (i >= args.size()) args.resize(i + 1);
  args[i] = std::move(arg);
  set_args(std::move(args));
}

void Node::replace_operand(size_t slot, Value* v) {
  Value* old = operand(slot);
  if (old == v) return;
  old->remove_use(Use{this, static_cast<uint32_t>(slot)});
  slots_[slot]->value = v;
  v->uses_.push_back(Use{this, static_cast<uint32_t>(slot)});
  v->touch_uses();
  graph_->touch(this, kTouchArgs);
}

Value* Node::add_output(ValueType type, std::optional<TensorMeta> meta, const std::string& name_hint) {
  // Room first, so a failed allocation cannot leak the value; most nodes have one output.
  if (outputs_.size() >= UINT32_MAX) throw IrError("node " + *op_ + " has more outputs than a node can hold");
  if (outputs_.size() == outputs_.capacity()) outputs_.reserve(2 * outputs_.size());
  Value* v = new Value(graph_, this, outputs_.size(), type, std::move(meta));
  outputs_.push_back(v);
  graph_->register_name(v, name_hint.empty() ? op_base() : name_hint);
  graph_->touch(this, kTouchOutputs);
  return v;
}

bool Node::has_users() const {
  for (const auto& o : outputs_)
    if (o->has_uses()) return true;
  return false;
}

void Node::move_before(Node* anchor) {
  if (anchor == this) return;
  graph_->unlink(this);
  graph_->link_before(this, anchor);
  graph_->touch(this, kTouchMoved);
}

void Node::move_after(Node* anchor) {
  if (anchor == nullptr) throw IrError("move_after: the anchor node is null");
  if (anchor == this) return;
  graph_->unlink(this);
  graph_->link_before(this, anchor->next_);
  graph_->touch(this, kTouchMoved);
}

// ---- Graph --------------------------------------------------------------------------

namespace {
// Plain recursion (a recursive std::function per clone cost a third of cloning a node).
void remap_values(Arg& a, const std::function<Value*(Value*)>& map) {
  if (a.kind == Arg::Kind::Value) a.value = map(a.value);
  else if (a.kind == Arg::Kind::List)
    for (Arg& e : a.mutable_list()) remap_values(e, map);
}
}  // namespace

Graph::Graph() : names_([](const Value* v) -> const std::string& { return v->name_; }) {}

Graph::~Graph() {
  // Drop every node without use-list bookkeeping: all values die together.
  Node* n = head_;
  while (n) {
    Node* next = n->next_;
    delete n;
    n = next;
  }
}

Value* Graph::add_input(const std::string& name, ValueType type, std::optional<TensorMeta> meta, InputRole role) {
  input_storage_.push_back(std::unique_ptr<Value>(new Value(this, nullptr, inputs_.size(), type, std::move(meta))));
  Value* v = input_storage_.back().get();
  v->role_ = role;
  inputs_.push_back(v);
  register_name(v, name);
  graph_changes_ |= kGraphInputs;
  return v;
}

void Graph::add_output(Value* v) {
  if (v->graph_ != this) throw IrError("output %" + v->name() + " belongs to another graph");
  outputs_.push_back(v);
  v->uses_.push_back(Use{nullptr, static_cast<uint32_t>(outputs_.size() - 1)});
  v->touch_uses();
  graph_changes_ |= kGraphOutputs;
}

void Graph::set_output(size_t i, Value* v) {
  Value* old = outputs_.at(i);
  old->remove_use(Use{nullptr, static_cast<uint32_t>(i)});
  outputs_[i] = v;
  v->uses_.push_back(Use{nullptr, static_cast<uint32_t>(i)});
  v->touch_uses();
  graph_changes_ |= kGraphOutputs;
}

void Graph::clear_outputs() {
  for (size_t i = 0; i < outputs_.size(); ++i) outputs_[i]->remove_use(Use{nullptr, static_cast<uint32_t>(i)});
  outputs_.clear();
  graph_changes_ |= kGraphOutputs;
}

Node* Graph::create(std::string_view op, std::vector<Arg> args, Node* insert_before) {
  return create_interned(intern_operator(op), std::move(args), insert_before);
}

Node* Graph::create_interned(const std::string* op, std::vector<Arg> args, Node* insert_before) {
  check_value_args(args, this, *op);
  Node* node = new Node(this, op);
  node->args_ = std::move(args);
  node->rebuild_slots();
  link_before(node, insert_before);
  ++num_nodes_;
  touch(node, kTouchCreated);
  ++created_in_log_;
  return node;
}

Node* Graph::clone_node(const Node& src, const std::function<Value*(Value*)>& map, Node* insert_before,
                        const std::string& name_suffix) {
  std::vector<Arg> args = src.args_;
  for (Arg& a : args) remap_values(a, map);
  Node* node = create_interned(src.op_, std::move(args), insert_before);
  if (src.meta_) node->meta_ = std::make_unique<NodeMeta>(*src.meta_);  // the node is new: already touched
  for (const auto& out : src.outputs_) {
    Value* copy = node->add_output(out->type_, out->meta_, name_suffix.empty() ? out->name_ : out->name_ + name_suffix);
    if (out->placements_) copy->placements_ = std::make_unique<std::vector<Placement>>(*out->placements_);
  }
  return node;
}

void Graph::erase(Node* node) {
  for (const auto& out : node->outputs_)
    if (out->has_uses())
      throw IrError("cannot erase node %" + out->name() + " = " + *node->op_ + ": its output still has " +
                    std::to_string(out->uses().size()) + " use(s)");
  node->drop_uses();
  for (Value* out : node->outputs_) forget_name(out);
  unlink(node);
  --num_nodes_;
  if (node->touched_ & kTouchCreated) --created_in_log_;
  if (node->touched_) touched_nodes_[node->touched_slot_] = nullptr;
  delete node;
}

Node* Graph::adopt(Node* node, const std::function<Value*(Value*)>& map, Node* insert_before) {
  Graph* source = node->graph_;
  if (source == this) throw IrError("adopt: node " + *node->op_ + " is already in this graph");
  if (insert_before && insert_before->graph_ != this)
    throw IrError("adopt: the node to insert before belongs to another graph");
  for (const auto& out : node->outputs_)
    for (const Use& use : out->uses_)
      if (use.is_graph_output())
        throw IrError("adopt: %" + out->name_ + " is an output of its graph; clear the graph's outputs first");
  // Every operand is mapped before anything changes, so a refused one leaves both graphs
  // as they were.
  std::vector<Value*> mapped(node->slots_.size());
  for (size_t i = 0; i < mapped.size(); ++i) {
    Value* old = node->slots_[i]->value;
    Value* v = map(old);
    if (v == nullptr) throw IrError("adopt: node " + *node->op_ + ": operand %" + old->name_ + " maps to a null value");
    if (v == old && v->graph_ != this && old->producer_ == nullptr)
      throw IrError("adopt: node " + *node->op_ + ": operand %" + old->name_ +
                    " is an input of another graph and maps to itself");
    if (v != old && v->graph_ != this)
      throw IrError("adopt: node " + *node->op_ + ": operand %" + old->name_ + " maps to %" + v->name_ +
                    ", a value of another graph");
    mapped[i] = v;
  }
  source->unlink(node);
  --source->num_nodes_;
  if (node->touched_ & kTouchCreated) --source->created_in_log_;
  if (node->touched_) source->touched_nodes_[node->touched_slot_] = nullptr;
  node->touched_ = 0;
  for (Value* out : node->outputs_) source->forget_name(out);
  const SourcePos op_position = node->source_op();
  const std::span<const SourcePos> positions = node->source_args();
  const bool parsed = node->source_count_ != 0;
  node->graph_ = this;
  node->source_count_ = 0;
  if (parsed) node->set_source(op_position, positions);
  for (Value* out : node->outputs_) {
    out->graph_ = this;
    const std::string hint = out->name_;
    register_name(out, hint);
  }
  for (size_t i = 0; i < mapped.size(); ++i) {
    Value* old = node->slots_[i]->value;
    if (mapped[i] == old) continue;
    old->remove_use(Use{node, static_cast<uint32_t>(i)});
    node->slots_[i]->value = mapped[i];
    mapped[i]->uses_.push_back(Use{node, static_cast<uint32_t>(i)});
    mapped[i]->touch_uses();
  }
  link_before(node, insert_before);
  ++num_nodes_;
  touch(node, kTouchCreated);
  ++created_in_log_;
  return node;
}

std::vector<Node*> Graph::node_list() const {
  std::vector<Node*> out;
  out.reserve(num_nodes_);
  for (Node* n = head_; n; n = n->next_) out.push_back(n);
  return out;
}

void Graph::link_before(Node* node, Node* anchor) {
  if (anchor == nullptr) {
    node->prev_ = tail_;
    node->next_ = nullptr;
    if (tail_) tail_->next_ = node;
    else head_ = node;
    tail_ = node;
  } else {
    node->next_ = anchor;
    node->prev_ = anchor->prev_;
    if (anchor->prev_) anchor->prev_->next_ = node;
    else head_ = node;
    anchor->prev_ = node;
  }
  assign_order(node);
}

void Graph::unlink(Node* node) {
  if (node->prev_) node->prev_->next_ = node->next_;
  else head_ = node->next_;
  if (node->next_) node->next_->prev_ = node->prev_;
  else tail_ = node->prev_;
  node->prev_ = node->next_ = nullptr;
}

namespace {
constexpr int64_t kOrderGap = int64_t{1} << 20;
}

void Graph::assign_order(Node* node) {
  int64_t lo = node->prev_ ? node->prev_->order_ : 0;
  if (!node->next_) {
    node->order_ = lo + kOrderGap;
    return;
  }
  int64_t hi = node->next_->order_;
  if (hi - lo > 1) {
    node->order_ = lo + (hi - lo) / 2;
    return;
  }
  // No label left between the neighbours. Renumbering the whole graph here made a pass
  // that inserts many nodes at one place quadratic; instead relabel the smallest aligned
  // label range around the spot that is sparse enough (Dietz and Sleator's order
  // maintenance: nodes^2 * 4 <= range), spreading its nodes evenly: O(log n) amortized.
  Node* first = node;
  Node* last = node;
  uint64_t count = 1;
  for (int bits = 1; bits < 62; ++bits) {
    const uint64_t size = uint64_t{1} << bits;
    const uint64_t base = static_cast<uint64_t>(lo) & ~(size - 1);
    while (first->prev_ && static_cast<uint64_t>(first->prev_->order_) >= base) {
      first = first->prev_;
      ++count;
    }
    while (last->next_ && static_cast<uint64_t>(last->next_->order_) < base + size) {
      last = last->next_;
      ++count;
    }
    if (count * count * 4 > size) continue;
    const uint64_t step = size / (count + 1);
    uint64_t label = base;
    for (Node* n = first;; n = n->next_) {
      n->order_ = static_cast<int64_t>(label += step);
      if (n == last) break;
    }
    return;
  }
  renumber();
}

void Graph::renumber() {
  int64_t order = 0;
  for (Node* n = head_; n; n = n->next_) n->order_ = (order += kOrderGap);
}

namespace {
// ASCII only, without the locale lookup of std::isalnum: every name goes through here.
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

std::string sanitize(const std::string& base) {
  std::string out;
  for (char c : base) out += is_name_char(c) ? c : '_';
  if (out.empty()) out = "v";
  if (std::isdigit(static_cast<unsigned char>(out[0])) || out[0] == '.') out = "v" + out;
  return out;
}
}  // namespace

std::string Graph::unique_name(const std::string& base) {
  std::string clean = sanitize(base);
  if (!names_.contains(clean)) return clean;
  int64_t& counter = name_counters_[clean];
  std::string candidate;
  do {
    candidate = clean + "_" + std::to_string(++counter);
  } while (names_.contains(candidate));
  return candidate;
}

namespace {
bool is_clean_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), is_name_char);
}
}  // namespace

void Graph::register_name(Value* v, const std::string& hint) {
  // A clean, free name (every name a parser or clone() gives) costs one lookup.
  if (is_clean_name(hint)) {
    v->name_ = hint;
    if (names_.insert(v)) return;  // one lookup when the name is free
  }
  v->name_ = unique_name(hint);
  names_.insert(v);
}

void Graph::forget_name(Value* v) {
  names_.erase(v);
}

void Graph::rename(Value* v, const std::string& name) {
  if (v->name_ == name) return;
  if (names_.contains(name)) throw IrError("value name %" + name + " is already taken");
  if (sanitize(name) != name) throw IrError("invalid value name '" + name + "'");
  forget_name(v);
  v->name_ = name;
  names_.insert(v);
  v->touch_declaration();
}

Value* Graph::find_value(std::string_view name) const {
  return names_.find(name);
}

std::unique_ptr<Graph> Graph::clone() const {
  auto g = std::make_unique<Graph>();
  ska::flat_hash_map<const Value*, Value*> map;
  map.reserve(names_.size());
  for (Value* in : inputs_) {
    Value* c = g->add_input(in->name_, in->type_, in->meta_, in->role_);
    if (in->placements_) c->placements_ = std::make_unique<std::vector<Placement>>(*in->placements_);
    map[in] = c;
  }
  for (Node* n = head_; n; n = n->next_) {
    Node* c = g->clone_node(*n, [&](Value* v) { return map.at(v); });
    c->source_line = n->source_line;
    c->source_column = n->source_column;
    if (n->source_count_) c->set_source(n->source_op(), n->source_args());
    for (size_t i = 0; i < n->outputs_.size(); ++i) {
      g->rename(c->output(i), n->outputs_[i]->name_);
      map[n->outputs_[i]] = c->output(i);
    }
  }
  for (Value* o : outputs_) g->add_output(map.at(o));
  g->name_counters_ = name_counters_;
  g->source_name = source_name;
  g->symbols_ = symbols_;
  g->claims_ = claims_;
  g->mesh_ = mesh_;
  for (const auto& [name, body] : subgraphs_) g->add_subgraph(name, body->clone());
  return g;
}

Graph* Graph::add_subgraph(const std::string& name, std::unique_ptr<Graph> body) {
  Graph* top = root();
  if (!body) throw IrError("subgraph " + name + " has no body");
  if (top->subgraphs_.count(name)) throw IrError("subgraph " + name + " is defined twice");
  if (!body->subgraphs_.empty()) {
    // A body built with its own table hands it to the top graph: one namespace.
    for (auto& [inner_name, inner] : body->subgraphs_) top->add_subgraph(inner_name, std::move(inner));
    body->subgraphs_.clear();
  }
  body->owner_ = top;
  body->subgraph_name_ = name;
  Graph* raw = body.get();
  top->subgraphs_.emplace(name, std::move(body));
  top->graph_changes_ |= kGraphSubgraphs;
  return raw;
}

Graph* Graph::find_subgraph(const std::string& name) const {
  const Graph* top = root();
  auto it = top->subgraphs_.find(name);
  return it == top->subgraphs_.end() ? nullptr : it->second.get();
}

bool Graph::remove_subgraph(const std::string& name) {
  Graph* top = root();
  top->graph_changes_ |= kGraphSubgraphs;
  return top->subgraphs_.erase(name) > 0;
}

void Graph::add_symbol(const sym::Symbol& symbol) {
  if (find_symbol(symbol.name)) throw IrError("symbol " + symbol.name + " is declared twice");
  symbols_.push_back(symbol);
  graph_changes_ |= kGraphSymbols;
}

void Graph::remove_symbol(const std::string& name) {
  graph_changes_ |= kGraphSymbols;
  symbols_.erase(std::remove_if(symbols_.begin(), symbols_.end(),
                                [&](const sym::Symbol& s) { return s.name == name; }),
                 symbols_.end());
}

const sym::Symbol* Graph::find_symbol(const std::string& name) const {
  for (const sym::Symbol& s : symbols_)
    if (s.name == name) return &s;
  return nullptr;
}

std::map<std::string, int64_t> Graph::symbol_hints() const {
  std::map<std::string, int64_t> hints;
  for (const sym::Symbol& s : symbols_) hints[s.name] = s.hint;
  return hints;
}

std::string Graph::print() const { return print_graph(*this); }

void Graph::clear_changes() {
  for (Node* n : touched_nodes_)
    if (n) n->touched_ = 0;
  touched_nodes_.clear();
  created_in_log_ = 0;
  graph_changes_ = 0;
}

size_t retarget_device(Graph& graph, c10::Device from, c10::Device to) {
  size_t changed = 0;
  auto retarget_meta = [&](Value* v) {
    if (v->meta() && v->meta()->device == from) {
      TensorMeta m = *v->meta();
      m.device = to;
      v->set_meta(m);
      ++changed;
    }
  };
  std::function<bool(Arg&)> retarget_arg = [&](Arg& a) {
    bool any = false;
    if (a.kind == Arg::Kind::Device && a.device == from) {
      a.device = to;
      any = true;
    } else if (a.kind == Arg::Kind::List) {
      for (Arg& e : a.mutable_list()) any |= retarget_arg(e);
    }
    return any;
  };
  for (Value* in : graph.inputs()) retarget_meta(in);
  for (Node* n : graph.nodes()) {
    std::vector<Arg> args = n->args();
    bool any = false;
    for (Arg& a : args)
      if (retarget_arg(a)) {
        any = true;
        ++changed;
      }
    if (any) n->set_args(std::move(args));
    for (Value* out : n->outputs()) retarget_meta(out);
  }
  // The bodies the graph calls move with it (their types must keep matching the calls).
  if (graph.root() == &graph)
    for (const auto& entry : graph.subgraphs()) changed += retarget_device(*entry.second, from, to);
  return changed;
}


}  // namespace passcheck::ir
