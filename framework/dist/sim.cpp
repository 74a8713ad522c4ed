// The simulated mesh (sim.h): a shared rendezvous table of collective slots, one
// communicator per rank thread.
#include "framework/dist/sim.h"

#include "framework/dist/collectives.h"

#include <ATen/ATen.h>

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

// One collective of one group: the k-th collective its members issue on it.
struct Slot {
  std::vector<int64_t> members;
  std::vector<bool> arrived;
  std::vector<CollectiveCall> calls;
  std::vector<at::Tensor> inputs;
  std::vector<ReduceOp> reduce_ops;
  int64_t num_arrived = 0, num_collected = 0;
  bool done = false;
  std::string error;
  std::vector<at::Tensor> results;
};

using SlotKey = std::pair<std::string, int64_t>;  // (member list, sequence number)

std::string members_key(const std::vector<int64_t>& members) {
  std::string key;
  for (int64_t m : members) key += std::to_string(m) + ",";
  return key;
}

std::string rank_list(const std::vector<int64_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

std::vector<int64_t> equal_splits(int64_t rows, int64_t n) { return std::vector<int64_t>(n, rows / n); }

// Every member's result of a complete slot, or a description of the disagreement.
std::vector<at::Tensor> compute_results(Slot& slot) {
  const size_t n = slot.members.size();
  const CollectiveCall& first = slot.calls[0];
  for (size_t i = 1; i < n; ++i)
    if (!slot.calls[i].matches(first))
      throw CollectiveError("ranks disagree on a collective of group " + first.group + " [" + rank_list(slot.members) +
                            "]: rank " + std::to_string(slot.members[0]) + " issued " + first.str() + ", rank " +
                            std::to_string(slot.members[i]) + " issued " + slot.calls[i].str());
  std::vector<at::Tensor> results(n);
  const std::string& op = first.op;
  if (op == "all_gather_into_tensor") {
    at::Tensor all = at::cat(slot.inputs, 0);
    for (auto& r : results) r = all;
  } else if (op == "all_reduce") {
    at::Tensor all = reduce_in_rank_order(slot.inputs, slot.reduce_ops[0]);
    for (auto& r : results) r = all;
  } else if (op == "reduce_scatter_tensor") {
    std::vector<at::Tensor> parts = reduce_in_rank_order(slot.inputs, slot.reduce_ops[0]).chunk(n, 0);
    for (size_t i = 0; i < n; ++i) results[i] = parts[i].contiguous();
  } else if (op == "all_to_all_single") {
    std::vector<std::vector<at::Tensor>> sent(n);  // sent[i][j]: rows member i sends to member j
    std::vector<std::vector<int64_t>> out_splits(n);
    for (size_t i = 0; i < n; ++i) {
      std::vector<int64_t> in = slot.calls[i].input_splits;
      if (in.empty()) in = equal_splits(slot.inputs[i].size(0), n);
      sent[i] = slot.inputs[i].split_with_sizes(in, 0);
      out_splits[i] = slot.calls[i].output_splits;
    }
    for (size_t j = 0; j < n; ++j) {
      std::vector<at::Tensor> received;
      for (size_t i = 0; i < n; ++i) {
        int64_t expected = out_splits[j].empty() ? slot.inputs[j].size(0) / static_cast<int64_t>(n) : out_splits[j][i];
        if (sent[i][j].size(0) != expected)
          throw CollectiveError("all_to_all_single on group " + first.group + " [" + rank_list(slot.members) +
                                "]: rank " + std::to_string(slot.members[i]) + " sends " +
                                std::to_string(sent[i][j].size(0)) + " rows to rank " +
                                std::to_string(slot.members[j]) + ", which expects " + std::to_string(expected));
        received.push_back(sent[i][j]);
      }
      results[j] = at::cat(received, 0);
    }
  } else {
    throw std::logic_error("sim: unknown collective " + op);
  }
  return results;
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
  std::mutex mutex;
  std::condition_variable changed;
  std::map<SlotKey, Slot> slots;
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
      Slot& slot = state_.slots[key];
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
      slot.inputs[i] = snapshot;
      slot.reduce_ops[i] = op;
      state_.last_issued[rank_] = description;
      if (++slot.num_arrived == g.size()) {
        try {
          slot.results = compute_results(slot);
        } catch (const std::exception& e) {
          slot.error = exception_message(e);
        }
        slot.done = true;
        slot.inputs.clear();
        state_.changed.notify_all();
      }
    }
    pending_[output.storage().unsafeGetStorageImpl()] = Pending{key, static_cast<size_t>(g.index), output, description};
  }

  void complete(const Pending& p) {
    std::unique_lock<std::mutex> lock(state_.mutex);
    auto deadline = std::chrono::steady_clock::now() + state_.options.timeout;
    Slot* slot = &state_.slots.at(p.key);
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
    std::string error = slot->error;
    at::Tensor result = error.empty() ? slot->results[p.index] : at::Tensor();
    if (++slot->num_collected == static_cast<int64_t>(slot->members.size())) state_.slots.erase(p.key);
    lock.unlock();
    if (!error.empty()) throw CollectiveError("rank " + std::to_string(rank_) + ": " + error);
    at::NoGradGuard no_grad;
    p.output.copy_(result);
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
