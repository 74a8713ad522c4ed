// The simulated mesh (sim.h): a shared rendezvous table of collective slots, one
// communicator per rank thread.
#include "framework/dist/sim.h"

#include "framework/dist/collectives.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include <algorithm>

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace passcheck::dist {

at::Tensor reduce_in_rank_order(const std::vector<at::Tensor>& inputs, ReduceOp op) {
  at::Tensor acc = inputs[0].clone();
  for (size_t i = 1; i < inputs.size(); ++i) {
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg: acc = at::add(acc, inputs[i]); break;
      case ReduceOp::Product: acc = at::mul(acc, inputs[i]); break;
      case ReduceOp::Min: acc = at::minimum(acc, inputs[i]); break;
      case ReduceOp::Max: acc = at::maximum(acc, inputs[i]); break;
    }
  }
  if (op == ReduceOp::Avg) {
    if (!at::isFloatingType(acc.scalar_type()))
      throw std::invalid_argument("reduce_op avg needs a floating-point tensor, not " +
                                  std::string(c10::toString(acc.scalar_type())));
    acc = at::div(acc, static_cast<double>(inputs.size()));
  }
  return acc;
}

namespace {

// One collective of one group: the k-th collective its members issue on it. Its fields
// are read and written under State::mutex; the tensors it holds are read outside it.
struct Slot {
  std::vector<int64_t> members;
  std::vector<bool> arrived;
  std::vector<CollectiveCall> calls;
  // Every member's input as it was at its call (a snapshot: the caller may reuse or
  // overwrite its input once the call returns, and an in-place all_reduce's input is
  // its poisoned output). Never written once the slot is done, so members read them
  // without the lock.
  std::vector<at::Tensor> inputs;
  std::vector<ReduceOp> reduce_ops;
  int64_t num_arrived = 0, num_collected = 0;
  // Every member arrived and the calls were checked (`error` says why they disagree).
  bool done = false;
  std::string error;
  // all_to_all_single: the rows member i sends to each member, in group order.
  std::vector<std::vector<int64_t>> sends;
  // all_reduce: the one result every member copies, reduced part by part by whichever
  // members are waiting for it (part_state: 0 free, 1 being reduced, 2 done).
  at::Tensor shared;
  std::vector<int64_t> part_bounds;
  std::vector<uint8_t> part_state;
  int64_t parts_done = 0;
  std::string part_error;
};

using SlotKey = std::pair<std::string, int64_t>;  // (member list, sequence number)

std::string members_key(const std::vector<int64_t>& members) {
  std::string key;
  for (int64_t m : members) key += std::to_string(m) + ",";
  return key;
}

std::vector<int64_t> equal_splits(int64_t rows, int64_t n) { return std::vector<int64_t>(n, rows / n); }

// Whether reducing a part of the members' tensors gives, element for element, the bits
// of reduce_in_rank_order on the whole tensors: true where every element of the result
// is the same chain of correctly rounded operations whichever kernel path (vectorized
// body or scalar tail) computes it: add, multiply and divide by the group size on real
// dtypes. min/max (the vector and scalar paths may differ on -0 vs +0) and complex
// arithmetic are reduced whole, exactly as reduce_in_rank_order does.
bool reduces_by_parts(ReduceOp op, c10::ScalarType dtype) {
  if (at::isComplexType(dtype)) return false;
  return op == ReduceOp::Sum || op == ReduceOp::Avg || op == ReduceOp::Product;
}

// out[k] = ((in[0][k] + in[1][k]) + in[2][k]) + ... (divided by the number of inputs
// for avg): the rounding of reduce_in_rank_order's at::add chain, one element at a time,
// in one pass over memory (blocks that stay in the L1 cache).
template <typename T>
void sum_in_rank_order(T* out, const std::vector<const T*>& in, int64_t count, bool avg) {
  constexpr int64_t kBlock = 1024;
  const size_t n = in.size();
  const T divisor = static_cast<T>(static_cast<double>(n));
  for (int64_t b = 0; b < count; b += kBlock) {
    const int64_t e = std::min(count, b + kBlock);
    if (n == 1) {
      for (int64_t k = b; k < e; ++k) out[k] = in[0][k];
    } else {
      const T* a = in[0];
      const T* c = in[1];
      for (int64_t k = b; k < e; ++k) out[k] = a[k] + c[k];
    }
    for (size_t i = 2; i < n; ++i) {
      const T* c = in[i];
      for (int64_t k = b; k < e; ++k) out[k] = out[k] + c[k];
    }
    if (avg)
      for (int64_t k = b; k < e; ++k) out[k] = out[k] / divisor;
  }
}

// out = parts[0] op parts[1] op ... in rank order (avg: divided by the number of parts):
// the bits reduce_in_rank_order gives for these elements, written straight into `out`.
void reduce_into(at::Tensor out, const std::vector<at::Tensor>& parts, ReduceOp op) {
  const c10::ScalarType dtype = parts[0].scalar_type();
  bool direct = out.scalar_type() == dtype && out.sizes() == parts[0].sizes() && reduces_by_parts(op, dtype);
  for (const at::Tensor& p : parts) direct = direct && p.scalar_type() == dtype && p.sizes() == parts[0].sizes();
  if (!direct) {
    out.copy_(reduce_in_rank_order(parts, op));
    return;
  }
  const bool is_sum = op == ReduceOp::Sum || op == ReduceOp::Avg;
  bool contiguous = out.is_contiguous();
  for (const at::Tensor& p : parts) contiguous = contiguous && p.is_contiguous();
  if (is_sum && contiguous && (dtype == at::kFloat || dtype == at::kDouble)) {
    AT_DISPATCH_FLOATING_TYPES(dtype, "sim_sum_in_rank_order", [&] {
      std::vector<const scalar_t*> in;
      for (const at::Tensor& p : parts) in.push_back(p.const_data_ptr<scalar_t>());
      sum_in_rank_order<scalar_t>(out.mutable_data_ptr<scalar_t>(), in, out.numel(), op == ReduceOp::Avg);
    });
    return;
  }
  if (parts.size() == 1) {
    out.copy_(parts[0]);
  } else if (is_sum) {
    at::add_out(out, parts[0], parts[1]);
    for (size_t i = 2; i < parts.size(); ++i) out.add_(parts[i]);
  } else {
    at::mul_out(out, parts[0], parts[1]);
    for (size_t i = 2; i < parts.size(); ++i) out.mul_(parts[i]);
  }
  if (op == ReduceOp::Avg) out.div_(static_cast<double>(parts.size()));
}

// Checks a complete slot (under the lock, by its last member to arrive): every member's
// call against the first, and what the data movement would otherwise fail on, with the
// messages the data movement gives. Moves no data.
void check_calls(Slot& slot) {
  const size_t n = slot.members.size();
  const CollectiveCall& first = slot.calls[0];
  for (size_t i = 1; i < n; ++i)
    if (!slot.calls[i].matches(first))
      throw CollectiveError("ranks disagree on a collective of group " + first.group + " [" + rank_list(slot.members) +
                            "]: rank " + std::to_string(slot.members[0]) + " issued " + first.str() + ", rank " +
                            std::to_string(slot.members[i]) + " issued " + slot.calls[i].str());
  const std::string& op = first.op;
  if (op == "all_gather_into_tensor") {
    if (slot.inputs[0].dim() == 0) (void)at::cat(slot.inputs, 0);  // throws: a scalar has no rows to gather
  } else if (op == "all_reduce" || op == "reduce_scatter_tensor") {
    const at::Tensor& in = slot.inputs[0];
    if (slot.reduce_ops[0] == ReduceOp::Avg && !at::isFloatingType(in.scalar_type()))
      throw std::invalid_argument("reduce_op avg needs a floating-point tensor, not " +
                                  std::string(c10::toString(in.scalar_type())));
    if (op == "reduce_scatter_tensor" && in.dim() == 0) (void)in.chunk(static_cast<int64_t>(n), 0);  // throws
    if (op == "all_reduce") {
      // The result's parts: as many as members, along the flattened elements, where a
      // part reduces to the whole's bits; else one part, the whole tensor.
      bool by_parts = reduces_by_parts(slot.reduce_ops[0], in.scalar_type());
      for (const at::Tensor& t : slot.inputs) by_parts = by_parts && t.is_contiguous();
      const int64_t parts = by_parts ? std::max<int64_t>(1, std::min<int64_t>(static_cast<int64_t>(n), in.numel())) : 1;
      slot.part_bounds.clear();
      for (int64_t p = 0; p <= parts; ++p) slot.part_bounds.push_back(in.numel() * p / parts);
      slot.part_state.assign(static_cast<size_t>(parts), 0);
      slot.parts_done = 0;
      slot.shared = at::empty(in.sizes(), in.options().memory_format(at::MemoryFormat::Contiguous));
    }
  } else if (op == "all_to_all_single") {
    slot.sends.assign(n, {});
    for (size_t i = 0; i < n; ++i) {
      std::vector<int64_t> in = slot.calls[i].input_splits;
      if (in.empty()) in = equal_splits(slot.inputs[i].size(0), static_cast<int64_t>(n));
      (void)slot.inputs[i].split_with_sizes(in, 0);  // throws when the splits do not cover the rows
      slot.sends[i] = in;
    }
    for (size_t j = 0; j < n; ++j) {
      const std::vector<int64_t>& out_splits = slot.calls[j].output_splits;
      for (size_t i = 0; i < n; ++i) {
        int64_t expected = out_splits.empty() ? slot.inputs[j].size(0) / static_cast<int64_t>(n) : out_splits[i];
        if (slot.sends[i][j] != expected)
          throw CollectiveError("all_to_all_single on group " + first.group + " [" + rank_list(slot.members) +
                                "]: rank " + std::to_string(slot.members[i]) + " sends " +
                                std::to_string(slot.sends[i][j]) + " rows to rank " + std::to_string(slot.members[j]) +
                                ", which expects " + std::to_string(expected));
      }
    }
  } else {
    throw std::logic_error("sim: unknown collective " + op);
  }
}

// all_gather: every member's input into its rows of `out`, in group order (the bits of
// concatenating them).
void gather_into(const at::Tensor& out, const std::vector<at::Tensor>& inputs) {
  const int64_t rows = inputs[0].size(0), n = static_cast<int64_t>(inputs.size());
  if (out.dim() == 0 || out.size(0) != rows * n) {
    out.copy_(at::cat(inputs, 0));  // not the shape c10d allocates: as before, copy_ says why
    return;
  }
  for (int64_t i = 0; i < n; ++i) out.narrow(0, i * rows, rows).copy_(inputs[i]);
}

// reduce_scatter: this member's chunk of the rank-order reduction, reduced from the
// members' chunks alone where that gives the same bits.
void reduce_chunk_into(const at::Tensor& out, const std::vector<at::Tensor>& inputs, ReduceOp op, int64_t index) {
  const int64_t n = static_cast<int64_t>(inputs.size());
  const int64_t rows = inputs[0].size(0);
  if (!reduces_by_parts(op, inputs[0].scalar_type()) || rows % n != 0) {
    out.copy_(reduce_in_rank_order(inputs, op).chunk(n, 0)[index]);
    return;
  }
  std::vector<at::Tensor> chunks;
  for (const at::Tensor& in : inputs) chunks.push_back(in.narrow(0, index * (rows / n), rows / n));
  reduce_into(out, chunks, op);
}

// all_to_all: the rows every member sends to member `index`, in group order.
void receive_into(const at::Tensor& out, const std::vector<at::Tensor>& inputs,
                  const std::vector<std::vector<int64_t>>& sends, int64_t index) {
  std::vector<at::Tensor> received;
  int64_t total = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    int64_t offset = 0;
    for (int64_t j = 0; j < index; ++j) offset += sends[i][j];
    received.push_back(inputs[i].narrow(0, offset, sends[i][index]));
    total += sends[i][index];
  }
  if (out.dim() == 0 || out.size(0) != total) {
    out.copy_(at::cat(received, 0));  // not the shape c10d allocates: as before, copy_ says why
    return;
  }
  int64_t row = 0;
  for (const at::Tensor& r : received) {
    out.narrow(0, row, r.size(0)).copy_(r);
    row += r.size(0);
  }
}

void poison(const at::Tensor& t) {
  if (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type())) t.fill_(NAN);
  else if (t.numel()) t.view({-1}).view(at::kByte).fill_(0x55);
}

}  // namespace

struct SimWorld::State {
  explicit State(DeviceMesh m, SimOptions o) : mesh(std::make_shared<const DeviceMesh>(std::move(m))), options(o) {}
  std::shared_ptr<const DeviceMesh> mesh;
  SimOptions options;
  // Guards the rendezvous bookkeeping: the slot table, every slot's fields, stopped and
  // last_issued. No data moves under it.
  std::mutex mutex;
  std::condition_variable changed;
  std::map<SlotKey, std::shared_ptr<Slot>> slots;
  // Why each rank stopped taking part: empty while it runs.
  std::vector<std::string> stopped;
  std::vector<std::string> last_issued;
};

namespace {

class SimCommunicator : public Communicator {
 public:
  SimCommunicator(SimWorld::State& state, int64_t rank) : state_(state), rank_(rank) {}
  std::string backend() const override { return "sim"; }
  int64_t rank() const override { return rank_; }
  int64_t world_size() const override { return state_.mesh->world_size(); }

  void all_gather(const at::Tensor& input, const at::Tensor& output, const Group& g) override {
    issue(call("all_gather_into_tensor", input, g), input, output, ReduceOp::Sum, g);
  }
  void reduce_scatter(const at::Tensor& input, const at::Tensor& output, ReduceOp op, const Group& g) override {
    CollectiveCall c = call("reduce_scatter_tensor", input, g);
    c.reduce_op = to_string(op);
    issue(c, input, output, op, g);
  }
  void all_reduce(const at::Tensor& input, const at::Tensor& output, ReduceOp op, const Group& g) override {
    CollectiveCall c = call("all_reduce", input, g);
    c.reduce_op = to_string(op);
    issue(c, input, output, op, g);
  }
  void all_to_all(const at::Tensor& input, const at::Tensor& output, const std::vector<int64_t>& output_splits,
                  const std::vector<int64_t>& input_splits, const Group& g) override {
    CollectiveCall c = call("all_to_all_single", input, g);
    c.output_splits = output_splits;
    c.input_splits = input_splits;
    issue(c, input, output, ReduceOp::Sum, g);
  }

  void wait(const at::Tensor& result) override {
    if (!result.defined() || !result.has_storage()) return;
    auto it = pending_.find(result.storage().unsafeGetStorageImpl());
    if (it == pending_.end()) return;
    Pending p = it->second;
    pending_.erase(it);
    complete(p);
  }

  void wait_all() override {
    while (!pending_.empty()) {
      Pending p = pending_.begin()->second;
      pending_.erase(pending_.begin());
      complete(p);
    }
  }

  /// Forgets pending collectives without completing them (the rank is stopping).
  void abandon() { pending_.clear(); }

 private:
  struct Pending {
    SlotKey key;
    size_t index;
    at::Tensor output;
    std::string description;
  };

  CollectiveCall call(const char* op, const at::Tensor& input, const Group& g) const {
    return CollectiveCall::of(op, input, g);
  }

  void issue(const CollectiveCall& c, const at::Tensor& input, const at::Tensor& output, ReduceOp op, const Group& g) {
    std::string mkey = members_key(g.members);
    int64_t seq = sequence_[mkey]++;
    SlotKey key{mkey, seq};
    at::NoGradGuard no_grad;
    at::Tensor snapshot = input.clone();  // before the poison: an all_reduce writes its input
    poison(output);
    std::string description = c.str() + " #" + std::to_string(seq) + " of group [" + rank_list(g.members) + "]";
    {
      std::lock_guard<std::mutex> lock(state_.mutex);
      std::shared_ptr<Slot>& entry = state_.slots[key];
      if (!entry) entry = std::make_shared<Slot>();
      Slot& slot = *entry;
      if (slot.members.empty()) {
        slot.members = g.members;
        slot.arrived.assign(g.members.size(), false);
        slot.calls.resize(g.members.size());
        slot.inputs.resize(g.members.size());
        slot.reduce_ops.resize(g.members.size());
      } else if (slot.members != g.members) {
        throw std::logic_error("sim: slot member lists differ for one key");
      }
      size_t i = static_cast<size_t>(g.index);
      slot.arrived[i] = true;
      slot.calls[i] = c;
      slot.inputs[i] = std::move(snapshot);
      slot.reduce_ops[i] = op;
      state_.last_issued[rank_] = description;
      if (++slot.num_arrived == g.size()) {
        try {
          check_calls(slot);
        } catch (const std::exception& e) {
          slot.error = exception_message(e);
        }
        slot.done = true;
        state_.changed.notify_all();
      }
    }
    pending_[output.storage().unsafeGetStorageImpl()] = Pending{key, static_cast<size_t>(g.index), output, description};
  }

  void complete(const Pending& p) {
    std::unique_lock<std::mutex> lock(state_.mutex);
    auto deadline = std::chrono::steady_clock::now() + state_.options.timeout;
    std::shared_ptr<Slot> slot = state_.slots.at(p.key);
    while (!slot->done) {
      // A member that stopped will never arrive.
      for (size_t i = 0; i < slot->members.size(); ++i) {
        int64_t m = slot->members[i];
        if (!slot->arrived[i] && !state_.stopped[m].empty())
          throw CollectiveError("rank " + std::to_string(rank_) + ": waiting for " + p.description + ": rank " +
                                std::to_string(m) + " " + state_.stopped[m] + " without issuing it");
      }
      if (state_.changed.wait_until(lock, deadline) == std::cv_status::timeout && !slot->done) {
        std::string missing;
        for (size_t i = 0; i < slot->members.size(); ++i)
          if (!slot->arrived[i]) {
            int64_t m = slot->members[i];
            missing += (missing.empty() ? "" : "; ") + std::string("rank ") + std::to_string(m) + " (last issued: " +
                       (state_.last_issued[m].empty() ? "nothing" : state_.last_issued[m]) + ")";
          }
        throw CollectiveError("rank " + std::to_string(rank_) + ": timed out after " +
                              std::to_string(state_.options.timeout.count()) + " ms waiting for " + p.description +
                              ": not issued by " + missing);
      }
    }
    // The slot is done: its inputs, calls and splits no longer change, and this member
    // holds it, so everything below reads them without the lock (all_reduce's parts
    // excepted). The table forgets the slot once every member has taken it.
    if (++slot->num_collected == static_cast<int64_t>(slot->members.size())) state_.slots.erase(p.key);
    lock.unlock();
    if (!slot->error.empty()) throw CollectiveError("rank " + std::to_string(rank_) + ": " + slot->error);
    at::NoGradGuard no_grad;
    const std::string& op = slot->calls[0].op;
    const int64_t index = static_cast<int64_t>(p.index);
    try {
      if (op == "all_gather_into_tensor") gather_into(p.output, slot->inputs);
      else if (op == "reduce_scatter_tensor") reduce_chunk_into(p.output, slot->inputs, slot->reduce_ops[0], index);
      else if (op == "all_to_all_single") receive_into(p.output, slot->inputs, slot->sends, index);
      else reduce_shared(*slot);
    } catch (const CollectiveError&) {
      throw;
    } catch (const std::exception& e) {
      throw CollectiveError("rank " + std::to_string(rank_) + ": " + exception_message(e));
    }
    if (op == "all_reduce") p.output.copy_(slot->shared);
  }

  // all_reduce: reduces free parts of the shared result until none is left, then waits
  // for the parts other members are reducing (they are running, not waiting: no cycle).
  void reduce_shared(Slot& slot) {
    std::unique_lock<std::mutex> lock(state_.mutex);
    const size_t parts = slot.part_state.size();
    for (;;) {
      size_t p = 0;
      while (p < parts && slot.part_state[p] != 0) ++p;
      if (p == parts) break;
      slot.part_state[p] = 1;
      lock.unlock();
      std::string error;
      try {
        reduce_part(slot, p);
      } catch (const std::exception& e) {
        error = exception_message(e);
      }
      lock.lock();
      slot.part_state[p] = 2;
      ++slot.parts_done;
      if (!error.empty() && slot.part_error.empty()) slot.part_error = error;
      state_.changed.notify_all();
    }
    while (slot.parts_done < static_cast<int64_t>(parts)) state_.changed.wait(lock);
    if (!slot.part_error.empty()) throw CollectiveError("rank " + std::to_string(rank_) + ": " + slot.part_error);
  }

  static void reduce_part(Slot& slot, size_t p) {
    const ReduceOp op = slot.reduce_ops[0];
    if (slot.part_state.size() == 1) {
      if (reduces_by_parts(op, slot.shared.scalar_type()) && slot.shared.numel() > 0) {
        bool contiguous = true;
        for (const at::Tensor& t : slot.inputs) contiguous = contiguous && t.is_contiguous();
        if (contiguous) {
          reduce_into(slot.shared, slot.inputs, op);
          return;
        }
      }
      slot.shared.copy_(reduce_in_rank_order(slot.inputs, op));
      return;
    }
    const int64_t begin = slot.part_bounds[p], length = slot.part_bounds[p + 1] - begin;
    std::vector<at::Tensor> parts;
    for (const at::Tensor& t : slot.inputs) parts.push_back(t.view({-1}).narrow(0, begin, length));
    reduce_into(slot.shared.view({-1}).narrow(0, begin, length), parts, op);
  }

  SimWorld::State& state_;
  int64_t rank_;
  std::map<std::string, int64_t> sequence_;
  std::unordered_map<const void*, Pending> pending_;
};

}  // namespace

void check_simulable(const DeviceMesh& mesh) {
  // One thread per rank: a mesh of a million ranks would end in std::terminate when the
  // threads run out, not in an error.
  if (mesh.world_size() > kMaxSimRanks)
    throw MeshError("mesh " + mesh.str() + ": a simulated mesh runs each rank as a thread, at most " +
                    std::to_string(kMaxSimRanks) + " ranks, not " + std::to_string(mesh.world_size()));
}

SimWorld::SimWorld(DeviceMesh mesh, SimOptions options) {
  check_simulable(mesh);
  state_ = std::make_shared<State>(std::move(mesh), options);
}

SimWorld::~SimWorld() = default;

const DeviceMesh& SimWorld::mesh() const { return *state_->mesh; }

std::vector<RankOutcome> SimWorld::run(const std::function<void(int64_t rank)>& fn) {
  const int64_t n = state_->mesh->world_size();
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->slots.clear();
    state_->stopped.assign(n, "");
    state_->last_issued.assign(n, "");
  }
  std::vector<RankOutcome> outcomes(n);
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < n; ++r) {
    threads.emplace_back([this, r, &fn, &outcomes] {
      RankOutcome& out = outcomes[r];
      out.rank = r;
      SimCommunicator comm(*state_, r);
      std::string stop_reason = "finished its run";
      try {
        RankScope scope(RankContext{state_->mesh, r, &comm});
        fn(r);
        comm.wait_all();
        out.ok = true;
      } catch (const std::exception& e) {
        out.error = exception_message(e);
        stop_reason = "failed (" + out.error + ")";
      } catch (...) {
        out.error = "unknown exception";
        stop_reason = "failed (unknown exception)";
      }
      comm.abandon();
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->stopped[r] = stop_reason;
      state_->changed.notify_all();
    });
  }
  for (auto& t : threads) t.join();
  return outcomes;
}

void run_sim(const DeviceMesh& mesh, const std::function<void(int64_t rank)>& fn, SimOptions options) {
  SimWorld world(mesh, options);
  std::vector<RankOutcome> outcomes = world.run(fn);
  std::string errors;
  for (const RankOutcome& o : outcomes)
    if (!o.ok) errors += "\n  rank " + std::to_string(o.rank) + ": " + o.error;
  if (!errors.empty()) throw CollectiveError("sim mesh " + mesh.str() + ": ranks failed:" + errors);
}

}  // namespace passcheck::dist
