// The c10d mesh backends (process_group.h): the store protocol that names faults, one
// c10d group per member list, and the collectives issued asynchronously and finished at
// their wait.
//
// Mismatch detection: every member publishes its CollectiveCall under
// passcheck/call/<members>/<seq>/<index> and reads the others' before handing the
// collective to c10d. c10d's own checker (ProcessGroupWrapper, TORCH_DISTRIBUTED_DEBUG=
// DETAIL) would need a second gloo group per group and reports in its own words; the
// store already carries the dead and stopped ranks, so one wait there names a mismatch, a
// dead rank, a stopped rank and a rank that never arrived exactly as the sim mesh does.
#include "framework/dist/process_group.h"

#include "framework/dist/sim.h"


#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <netdb.h>
#include <sys/socket.h>
#ifdef PASSCHECK_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <thread>

namespace passcheck::dist {

const std::chrono::milliseconds kMinimumStoreTimeout{10000};

namespace {

// A gloo group of `size` ranks talking through `store` (already prefixed per group);
// `hostname` picks the interface ("127.0.0.1" for local runs), empty for the default.
c10::intrusive_ptr<c10d::Backend> make_gloo_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                    std::chrono::milliseconds timeout, const std::string& hostname,
                                                    const std::string& interface) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  if (!interface.empty()) options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
  else if (!hostname.empty()) options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(hostname));
  else options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  // One worker thread: a rank's collectives on one group run in issue order anyway, and
  // test meshes put several ranks on few cores.
  options->threads = 1;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
}

#ifdef PASSCHECK_WITH_NCCL
// An NCCL group of `size` ranks (one GPU each) talking through `store`.
c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                    std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
}
#endif

}  // namespace

std::string dead_rank_key(int64_t rank) { return "passcheck/dead/" + std::to_string(rank); }
std::string stopped_rank_key(int64_t rank) { return "passcheck/stopped/" + std::to_string(rank); }
std::string last_issued_key(int64_t rank) { return "passcheck/last/" + std::to_string(rank); }

namespace {

std::string store_group_key(const std::vector<int64_t>& members) {
  std::string key;
  for (int64_t m : members) key += (key.empty() ? "" : ",") + std::to_string(m);
  return key;
}

std::vector<uint8_t> bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }
std::string text(const std::vector<uint8_t>& b) { return std::string(b.begin(), b.end()); }

// A CollectiveCall as one line per field, lists comma-separated.
std::string encode_list(const std::vector<int64_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out;
}

std::vector<int64_t> decode_list(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoll(item));
  return out;
}

std::string encode_call(const CollectiveCall& c) {
  return c.op + "\n" + c.group + "\n" + c.reduce_op + "\n" + c.dtype + "\n" + encode_list(c.sizes) + "\n" +
         encode_list(c.output_splits) + "\n" + encode_list(c.input_splits) + "\n";
}

CollectiveCall decode_call(const std::string& s) {
  std::stringstream in(s);
  std::string field[7];
  for (auto& f : field) std::getline(in, f);
  CollectiveCall c;
  c.op = field[0];
  c.group = field[1];
  c.reduce_op = field[2];
  c.dtype = field[3];
  c.sizes = decode_list(field[4]);
  c.output_splits = decode_list(field[5]);
  c.input_splits = decode_list(field[6]);
  return c;
}

int64_t parse_int_variable(const char* name, int64_t min, int64_t max) {
  const char* value = std::getenv(name);
  if (!value || !*value) throw std::invalid_argument("environment variable " + std::string(name) + " is not set");
  try {
    size_t used = 0;
    long long v = std::stoll(value, &used);
    if (used == std::string(value).size() && v >= min && v <= max) return v;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument("environment variable " + std::string(name) + "='" + value + "' is not an integer in [" +
                              std::to_string(min) + ", " + std::to_string(max) + "]");
}

// Avg is a sum divided at the wait: only floating-point tensors can hold the quotient.
void check_avg_dtype(ReduceOp op, const at::Tensor& input) {
  if (op == ReduceOp::Avg && !at::isFloatingType(input.scalar_type()))
    throw std::invalid_argument("reduce_op avg needs a floating-point tensor, not " +
                                std::string(c10::toString(input.scalar_type())));
}

c10d::AllreduceOptions allreduce_options(ReduceOp op) {
  c10d::AllreduceOptions options;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg: options.reduceOp = c10d::ReduceOp::SUM; break;
    case ReduceOp::Product: options.reduceOp = c10d::ReduceOp::PRODUCT; break;
    case ReduceOp::Min: options.reduceOp = c10d::ReduceOp::MIN; break;
    case ReduceOp::Max: options.reduceOp = c10d::ReduceOp::MAX; break;
  }
  return options;
}

}  // namespace

RendezvousInfo rendezvous_from_environment() {
  RendezvousInfo info;
  info.world_size = parse_int_variable("WORLD_SIZE", 1, 1 << 20);
  info.rank = parse_int_variable("RANK", 0, info.world_size - 1);
  info.local_rank = parse_int_variable("LOCAL_RANK", 0, info.world_size - 1);
  const char* addr = std::getenv("MASTER_ADDR");
  if (!addr || !*addr) throw std::invalid_argument("environment variable MASTER_ADDR is not set");
  info.master_addr = addr;
  // Resolved once here: the store would retry an unknown host until its timeout.
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int resolved = ::getaddrinfo(addr, nullptr, &hints, &found);
  if (resolved != 0)
    throw std::invalid_argument("environment variable MASTER_ADDR '" + std::string(addr).substr(0, 100) +
                                "' does not resolve: " + ::gai_strerror(resolved));
  ::freeaddrinfo(found);
  info.master_port = static_cast<int>(parse_int_variable("MASTER_PORT", 1, 65535));
  const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  info.agent_store = agent && std::string(agent) == "True";
  if (std::getenv("PASSCHECK_DIST_TIMEOUT_MS"))
    info.timeout = std::chrono::milliseconds(parse_int_variable("PASSCHECK_DIST_TIMEOUT_MS", 1, int64_t(1) << 40));
  return info;
}

struct ProcessGroupCommunicator::Impl {
  struct GroupState {
    c10::intrusive_ptr<c10d::Backend> backend;
  };
  // A collective handed to c10d, finished by its wait.
  struct Pending {
    const void* storage;
    c10::intrusive_ptr<c10d::Work> work;
    std::function<void()> finish;
    std::string description;
    std::vector<int64_t> members;
  };

  RendezvousInfo info;
  std::string backend_name;
  c10::intrusive_ptr<c10d::Store> store;
  std::map<std::string, GroupState> groups;
  std::map<std::string, int64_t> sequences;  // collectives issued per member list
  std::vector<Pending> pending;  // issue order
  bool failed = false;

  std::string who() const { return "rank " + std::to_string(info.rank); }

  // Why member `m` stopped taking part, or "" while it runs.
  std::string stop_reason(int64_t m) {
    if (store->check({stopped_rank_key(m)})) return text(store->get(stopped_rank_key(m)));
    if (store->check({dead_rank_key(m)})) return "died (" + text(store->get(dead_rank_key(m))) + ")";
    return "";
  }

  std::string last_issued(int64_t m) {
    return store->check({last_issued_key(m)}) ? text(store->get(last_issued_key(m))) : "nothing";
  }

  GroupState& group_state(const Group& g) {
    std::string key = store_group_key(g.members);
    auto it = groups.find(key);
    if (it != groups.end()) return it->second;
    GroupState state;
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>("passcheck/pg/" + key, store);
    try {
#ifdef PASSCHECK_WITH_NCCL
      if (backend_name == "nccl")
        state.backend = make_nccl_backend(prefixed, static_cast<int>(g.index), static_cast<int>(g.size()),
                                          info.timeout);
#endif
      if (!state.backend) {
        bool loopback = info.master_addr == "127.0.0.1" || info.master_addr == "localhost";
        const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
        state.backend = make_gloo_backend(prefixed, static_cast<int>(g.index), static_cast<int>(g.size()),
                                          info.timeout, loopback ? "127.0.0.1" : "", interface ? interface : "");
      }
    } catch (const c10::Error& e) {
      failed = true;
      throw CollectiveError(who() + ": could not create the " + backend_name + " group " + g.name + " [" +
                            rank_list(g.members) + "]: " + e.what_without_backtrace());
    }
    return groups.emplace(key, std::move(state)).first->second;
  }

  // Publishes this rank's call and waits until every member of `g` published the same
  // collective; throws CollectiveError naming a disagreement, a stopped or dead member,
  // or the members that did not arrive within the timeout.
  void meet(const CollectiveCall& call, const Group& g, int64_t seq, const std::string& description) {
    std::string prefix = "passcheck/call/" + store_group_key(g.members) + "/";
    auto call_key = [&](int64_t s, int64_t index) { return prefix + std::to_string(s) + "/" + std::to_string(index); };
    store->set(last_issued_key(info.rank), bytes(description));
    store->set(call_key(seq, g.index), bytes(encode_call(call)));
    std::vector<std::string> keys;
    for (int64_t i = 0; i < g.size(); ++i) keys.push_back(call_key(seq, i));
    auto deadline = std::chrono::steady_clock::now() + info.timeout;
    auto pause = std::chrono::milliseconds(1);
    while (!store->check(keys)) {
      std::vector<int64_t> missing;
      for (int64_t i = 0; i < g.size(); ++i)
        if (!store->check({keys[i]})) missing.push_back(g.members[i]);
      for (int64_t m : missing) {
        std::string reason = stop_reason(m);
        if (!reason.empty())
          throw CollectiveError(who() + ": waiting for " + description + ": rank " + std::to_string(m) + " " + reason +
                                " without issuing it");
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        std::string not_issued;
        for (int64_t m : missing)
          not_issued += (not_issued.empty() ? "" : "; ") + std::string("rank ") + std::to_string(m) +
                        " (last issued: " + last_issued(m) + ")";
        throw CollectiveError(who() + ": timed out after " + std::to_string(info.timeout.count()) +
                              " ms waiting for " + description + ": not issued by " + not_issued);
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(50));
    }
    std::vector<CollectiveCall> calls;
    for (const std::string& k : keys) calls.push_back(decode_call(text(store->get(k))));
    // Every member has published call `seq`, so every member has read our call `seq - 1`.
    if (seq > 0) store->deleteKey(call_key(seq - 1, g.index));
    for (int64_t i = 1; i < g.size(); ++i)
      if (!calls[i].matches(calls[0]))
        throw CollectiveError(who() + ": ranks disagree on a collective of group " + calls[0].group + " [" +
                              rank_list(g.members) + "]: rank " + std::to_string(g.members[0]) + " issued " +
                              calls[0].str() + ", rank " + std::to_string(g.members[i]) + " issued " + calls[i].str());
    if (call.op == "all_to_all_single") check_splits(calls, g);
  }

  // The rows member i sends member j must be the rows j expects from i (sim's check).
  void check_splits(const std::vector<CollectiveCall>& calls, const Group& g) {
    const int64_t n = g.size();
    auto rows = [&](const std::vector<int64_t>& splits, const CollectiveCall& c, int64_t k) {
      return splits.empty() ? c.sizes[0] / n : splits[k];
    };
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t sent = rows(calls[i].input_splits, calls[i], j), expected = rows(calls[j].output_splits, calls[j], i);
        if (sent != expected)
          throw CollectiveError(who() + ": all_to_all_single on group " + g.name + " [" + rank_list(g.members) +
                                "]: rank " + std::to_string(g.members[i]) + " sends " + std::to_string(sent) +
                                " rows to rank " + std::to_string(g.members[j]) + ", which expects " +
                                std::to_string(expected));
      }
  }

  CollectiveCall make_call(const char* op, const at::Tensor& input, const Group& g) const {
    return CollectiveCall::of(op, input, g);
  }

  // Meets the group, issues the c10d collective `start` returns, and records how its
  // wait finishes `result`.
  void issue(const CollectiveCall& call, const Group& g, const at::Tensor& result,
             const std::function<c10::intrusive_ptr<c10d::Work>(c10d::Backend&)>& start, std::function<void()> finish) {
    int64_t seq = sequences[store_group_key(g.members)]++;
    std::string description = call.str() + " #" + std::to_string(seq) + " of group [" + rank_list(g.members) + "]";
    try {
      meet(call, g, seq, description);
    } catch (const CollectiveError&) {
      failed = true;
      throw;
    }
    // Created after the first meeting: every member is then known to be there, so the
    // c10d rendezvous of a group never waits for a rank that stopped.
    GroupState& state = group_state(g);
    c10::intrusive_ptr<c10d::Work> work;
    try {
      work = start(*state.backend);
    } catch (const c10::Error& e) {
      failed = true;
      throw CollectiveError(who() + ": " + backend_name + " refused " + description + ": " + e.what_without_backtrace());
    }
    pending.push_back(Pending{result.storage().unsafeGetStorageImpl(), work, std::move(finish), description, g.members});
  }

  // A reduction (all_reduce, reduce_scatter): `mine` picks this rank's part of the
  // reduced tensor, which the wait writes into `result`.
  void reduce(const CollectiveCall& call, const at::Tensor& input, ReduceOp op, const Group& g,
              const at::Tensor& result, std::function<at::Tensor(const at::Tensor&)> mine);

  void complete(Pending& p) {
    try {
      p.work->wait();
    } catch (const std::exception& e) {
      failed = true;
      std::string transport = dynamic_cast<const c10::Error*>(&e) ? std::string(static_cast<const c10::Error&>(e).what_without_backtrace())
                                                                  : std::string(e.what());
      std::string blamed = culprits(p.members);
      throw CollectiveError(who() + ": " + p.description + " failed" + (blamed.empty() ? "" : ": " + blamed) + " (" +
                            backend_name + ": " + transport + ")");
    }
    at::NoGradGuard no_grad;
    if (p.finish) p.finish();
  }

  // The members to blame for a collective that broke in flight. A member's process that
  // died is recorded by the launcher a moment after the transport notices, so this
  // waits briefly for a record before falling back to the members that stopped.
  std::string culprits(const std::vector<int64_t>& members) {
    auto deadline = std::chrono::steady_clock::now() + std::min(info.timeout, std::chrono::milliseconds(3000));
    std::string stopped;
    do {
      std::string dead;
      stopped.clear();
      for (int64_t m : members) {
        if (m == info.rank) continue;
        if (store->check({stopped_rank_key(m)})) {
          stopped += (stopped.empty() ? "" : "; ") + std::string("rank ") + std::to_string(m) + " " +
                     text(store->get(stopped_rank_key(m)));
        } else if (store->check({dead_rank_key(m)})) {
          dead += (dead.empty() ? "" : "; ") + std::string("rank ") + std::to_string(m) + " died (" +
                  text(store->get(dead_rank_key(m))) + ")";
        }
      }
      if (!dead.empty()) return dead;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    return stopped;
  }
};

ProcessGroupCommunicator::ProcessGroupCommunicator(const RendezvousInfo& info, const std::string& backend)
    : impl_(std::make_unique<Impl>()) {
  if (backend != "gloo" && backend != "nccl")
    throw std::invalid_argument("unknown mesh backend '" + backend + "' (valid: sim, gloo, nccl)");
#ifndef PASSCHECK_WITH_NCCL
  if (backend == "nccl")
    throw std::invalid_argument("the nccl backend needs a build of passcheck with CUDA and NCCL (see passcheck --version)");
#endif
  impl_->info = info;
  impl_->backend_name = backend;
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(info.master_port);
  options.isServer = !info.agent_store && info.rank == 0;
  options.numWorkers = c10::nullopt;
  options.waitWorkers = false;
  options.timeout = std::max(info.timeout, kMinimumStoreTimeout);
  try {
    impl_->store = c10::make_intrusive<c10d::TCPStore>(info.master_addr, options);
  } catch (const std::exception& e) {
    throw CollectiveError("rank " + std::to_string(info.rank) + ": cannot reach the rendezvous store at " +
                          info.master_addr + ":" + std::to_string(info.master_port) + ": " + e.what());
  }
}

ProcessGroupCommunicator::~ProcessGroupCommunicator() {
  if (impl_->failed) {
    // Deliberately leaked: a group whose collective broke would block its destructor
    // until the transport times out; the process is about to end.
    for (auto& [key, state] : impl_->groups) state.backend.release();
    for (auto& p : impl_->pending) p.work.release();
  }
}

std::string ProcessGroupCommunicator::backend() const { return impl_->backend_name; }
int64_t ProcessGroupCommunicator::rank() const { return impl_->info.rank; }
int64_t ProcessGroupCommunicator::world_size() const { return impl_->info.world_size; }

namespace {

// gloo moves and reduces a fixed set of dtypes (no bfloat16, no int16, no bool);
// bfloat16 travels as float16 and bool as uint8, the gloo dtypes of their width (data
// movement copies bytes, so the values arrive bit for bit).
at::Tensor on_the_wire(const at::Tensor& t) {
  if (t.scalar_type() == at::kBFloat16) return t.view(at::kHalf);
  if (t.scalar_type() == at::kBool) return t.view(at::kByte);
  return t;
}

bool reduced_natively(c10::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat:
    case at::kDouble:
    case at::kHalf:
    case at::kChar:
    case at::kByte:
    case at::kInt:
    case at::kLong: return true;
    default: return false;
  }
}

}  // namespace

void ProcessGroupCommunicator::all_gather(const at::Tensor& input, const at::Tensor& output, const Group& g) {
  // c10d reads the input while the collective runs; sim snapshots it at the call.
  std::vector<at::Tensor> inputs{on_the_wire(input.clone())};
  std::vector<std::vector<at::Tensor>> outputs{on_the_wire(output).chunk(g.size(), 0)};
  impl_->issue(
      impl_->make_call("all_gather_into_tensor", input, g), g, output,
      [&](c10d::Backend& b) { return b.allgather(outputs, inputs); }, nullptr);
}

void ProcessGroupCommunicator::all_reduce(const at::Tensor& input, const at::Tensor& output, ReduceOp op,
                                          const Group& g) {
  CollectiveCall call = impl_->make_call("all_reduce", input, g);
  call.reduce_op = to_string(op);
  impl_->reduce(call, input, op, g, output, [](const at::Tensor& full) { return full; });
}

void ProcessGroupCommunicator::reduce_scatter(const at::Tensor& input, const at::Tensor& output, ReduceOp op,
                                              const Group& g) {
  // gloo has no reduce_scatter: reduce everything, keep this rank's chunk at the wait.
  CollectiveCall call = impl_->make_call("reduce_scatter_tensor", input, g);
  call.reduce_op = to_string(op);
  int64_t n = g.size(), index = g.index;
  impl_->reduce(call, input, op, g, output, [n, index](const at::Tensor& full) { return full.chunk(n, 0)[index]; });
}

void ProcessGroupCommunicator::Impl::reduce(const CollectiveCall& call, const at::Tensor& input, ReduceOp op,
                                            const Group& g, const at::Tensor& result,
                                            std::function<at::Tensor(const at::Tensor&)> mine) {
  check_avg_dtype(op, input);
  const int64_t n = g.size();
  if (!reduced_natively(input.scalar_type())) {
    // No native reduction for this dtype: gather every member's input and reduce in
    // rank order, which is exactly the sim mesh's result.
    at::Tensor gathered = at::empty({n * input.numel()}, input.options());
    std::vector<at::Tensor> inputs{on_the_wire(input.reshape({-1}).clone())};
    std::vector<std::vector<at::Tensor>> outputs{on_the_wire(gathered).chunk(n, 0)};
    std::vector<int64_t> sizes = input.sizes().vec();
    issue(call, g, result, [&](c10d::Backend& b) { return b.allgather(outputs, inputs); },
          [result, gathered, sizes, n, op, mine]() mutable {
            std::vector<at::Tensor> parts;
            for (const at::Tensor& part : gathered.chunk(n, 0)) parts.push_back(part.view(sizes));
            result.copy_(mine(reduce_in_rank_order(parts, op)));
          });
    return;
  }
  std::vector<at::Tensor> buffer{input.clone()};
  c10d::AllreduceOptions options = allreduce_options(op);
  at::Tensor full = buffer[0];
  bool avg = op == ReduceOp::Avg;
  issue(call, g, result, [&](c10d::Backend& b) { return b.allreduce(buffer, options); },
        [result, full, n, avg, mine]() mutable {
          at::Tensor part = mine(full);
          result.copy_(avg ? at::div(part, static_cast<double>(n)) : part);
        });
}

void ProcessGroupCommunicator::all_to_all(const at::Tensor& input, const at::Tensor& output,
                                          const std::vector<int64_t>& output_splits,
                                          const std::vector<int64_t>& input_splits, const Group& g) {
  CollectiveCall call = impl_->make_call("all_to_all_single", input, g);
  call.output_splits = output_splits;
  call.input_splits = input_splits;
  at::Tensor wire_output = on_the_wire(output), wire_input = on_the_wire(input.clone());
  std::vector<int64_t> out = output_splits, in = input_splits;
  impl_->issue(
      call, g, output, [&](c10d::Backend& b) { return b.alltoall_base(wire_output, wire_input, out, in); }, nullptr);
}

void ProcessGroupCommunicator::wait(const at::Tensor& result) {
  if (!result.defined() || !result.has_storage()) return;
  const void* storage = result.storage().unsafeGetStorageImpl();
  auto& pending = impl_->pending;
  for (auto it = pending.begin(); it != pending.end(); ++it)
    if (it->storage == storage) {
      Impl::Pending p = std::move(*it);
      pending.erase(it);
      impl_->complete(p);
      return;
    }
}

void ProcessGroupCommunicator::wait_all() {
  while (!impl_->pending.empty()) {
    Impl::Pending p = std::move(impl_->pending.front());
    impl_->pending.erase(impl_->pending.begin());
    impl_->complete(p);
  }
}

void ProcessGroupCommunicator::mark_stopped(const std::string& reason) {
  try {
    impl_->store->set(stopped_rank_key(impl_->info.rank), bytes(reason));
  } catch (const std::exception&) {
    // The store is gone (its host ended): nobody is left to tell.
  }
}

std::unique_ptr<ProcessGroupCommunicator> init_from_environment(const std::string& backend) {
  return std::make_unique<ProcessGroupCommunicator>(rendezvous_from_environment(), backend);
}

}  // namespace passcheck::dist
