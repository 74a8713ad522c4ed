// Claim checking with Z3 (see prover.h).
//
// Expressions translate to Z3 integer terms with Python's semantics. Z3's div and mod are
// Euclidean (the remainder is never negative), which is floor division exactly when the
// divisor is positive; other divisors go through the positive case by negating both
// operands. Division by zero is an error when evaluating an expression, so a claim only
// holds where every divisor in it is nonzero: the prover looks for a value that is
// admissible and either makes a divisor zero or makes the condition false, and reports
// such a value as a refutation (with a reason naming the zero divisor).
#include "framework/sym/prover.h"

#include <z3++.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

namespace passcheck::sym {

namespace {

using Kind = Expr::Kind;

class Translator {
 public:
  explicit Translator(z3::context& ctx) : ctx_(ctx), divisors_nonzero_(ctx) {}

  z3::expr translate(const Expr& e) {
    const auto& ops = e.operands();
    switch (e.kind()) {
      case Kind::Constant: return ctx_.int_val(e.constant_value());
      case Kind::BoolConstant: return ctx_.bool_val(e.constant_value() != 0);
      case Kind::Symbol: return ctx_.int_const(e.symbol_name().c_str());
      case Kind::Add: {
        z3::expr sum = translate(ops[0]);
        for (size_t i = 1; i < ops.size(); ++i) sum = sum + translate(ops[i]);
        return sum;
      }
      case Kind::Mul: {
        z3::expr prod = translate(ops[0]);
        for (size_t i = 1; i < ops.size(); ++i) prod = prod * translate(ops[i]);
        return prod;
      }
      case Kind::FloorDiv:
      case Kind::Mod: return division(e.kind(), ops[0], ops[1]);
      case Kind::Min: {
        const z3::expr a = translate(ops[0]);
        const z3::expr b = translate(ops[1]);
        return z3::ite(a <= b, a, b);
      }
      case Kind::Max: {
        const z3::expr a = translate(ops[0]);
        const z3::expr b = translate(ops[1]);
        return z3::ite(a >= b, a, b);
      }
      case Kind::Eq: return translate(ops[0]) == translate(ops[1]);
      case Kind::Ne: return translate(ops[0]) != translate(ops[1]);
      case Kind::Lt: return translate(ops[0]) < translate(ops[1]);
      case Kind::Le: return translate(ops[0]) <= translate(ops[1]);
      case Kind::And:
      case Kind::Or: {
        z3::expr_vector terms(ctx_);
        for (const Expr& op : ops) terms.push_back(translate(op));
        return e.kind() == Kind::And ? z3::mk_and(terms) : z3::mk_or(terms);
      }
      case Kind::Not: return !translate(ops[0]);
    }
    throw std::logic_error("unhandled expression kind in " + e.to_string());
  }

  /// Divisors met so far that are not known to be nonzero.
  const std::vector<Expr>& divisors() const { return divisors_; }
  /// Conjunction of "divisor != 0" over divisors().
  z3::expr divisors_nonzero() const { return z3::mk_and(divisors_nonzero_); }

 private:
  z3::expr division(Kind kind, const Expr& numerator, const Expr& divisor) {
    const z3::expr a = translate(numerator);
    const z3::expr b = translate(divisor);
    const auto constant = divisor.as_constant();
    if (constant && *constant > 0) return kind == Kind::FloorDiv ? a / b : z3::mod(a, b);
    if (!constant || *constant == 0) {
      divisors_.push_back(divisor);
      divisors_nonzero_.push_back(b != 0);
    }
    // floor(a / b) == floor(-a / -b), and Python's a % b == -((-a) % (-b)). Where b is
    // zero the value is irrelevant: the claim is already false there.
    if (kind == Kind::FloorDiv) return z3::ite(b > 0, a / b, (-a) / (-b));
    return z3::ite(b > 0, z3::mod(a, b), -z3::mod(-a, -b));
  }

  z3::context& ctx_;
  std::vector<Expr> divisors_;
  z3::expr_vector divisors_nonzero_;
};

// Interrupts a Z3 context when a deadline passes, from a thread of its own. Z3's own
// "timeout" parameter runs on its scoped_timer thread pool, which deadlocks in Z3 4.8.12
// (Z3Prover/z3#5990) once a timer expires; Z3_interrupt is documented as safe to call
// from another thread.
class Watchdog {
 public:
  Watchdog(z3::context& ctx, unsigned timeout_ms)
      : thread_([this, &ctx, timeout_ms] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (stopped_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return done_; })) return;
          fired_ = true;
          // Interrupt again until the check returns: an interrupt that lands before the
          // solver starts checking is cleared when it starts (a 1 ms deadline on a loaded
          // machine hung the check for good).
          do {
            ctx.interrupt();
          } while (!stopped_.wait_for(lock, std::chrono::milliseconds(10), [this] { return done_; }));
        }) {}

  ~Watchdog() { stop(); }

  /// Stops the watchdog; true when it had already interrupted the context.
  bool stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    stopped_.notify_one();
    if (thread_.joinable()) thread_.join();
    return fired_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable stopped_;
  bool done_ = false;
  bool fired_ = false;
  std::thread thread_;  // last: starts once the members it uses exist
};

// Why `symbol` admits no value, or "" when it admits one.
std::string inadmissible_reason(const Symbol& symbol) {
  if (symbol.multiple_of < 1)
    return "symbol " + symbol.name + " has invalid multiple_of " + std::to_string(symbol.multiple_of);
  // The smallest multiple of multiple_of that is >= min, in 128 bits.
  const __int128 m = symbol.multiple_of;
  __int128 first = static_cast<__int128>(symbol.min) / m * m;
  if (first < symbol.min) first += m;
  if (first > symbol.max) return "symbol " + symbol.to_string() + " has no admissible value";
  return "";
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The declarations of `names`, or the reason they cannot be used.
std::string find_declarations(const std::set<std::string>& names, const std::vector<Symbol>& symbols,
                              std::vector<Symbol>& declarations) {
  std::vector<std::string> undeclared;
  for (const std::string& name : names) {
    const Symbol* found = nullptr;
    for (const Symbol& s : symbols) {
      if (s.name != name) continue;
      if (found && !(*found == s)) return "conflicting declarations of " + name;
      found = &s;
    }
    if (!found) {
      undeclared.push_back(name);
      continue;
    }
    if (std::string why = inadmissible_reason(*found); !why.empty()) return why;
    declarations.push_back(*found);
  }
  if (undeclared.empty()) return "";
  return std::string(undeclared.size() == 1 ? "undeclared symbol " : "undeclared symbols ") + join_names(undeclared);
}

// Fills the verdict of `result` (everything but the timing).
void decide(ClaimResult& result, const std::vector<Symbol>& symbols, const ProveOptions& options) {
  const Expr& condition = result.claim.condition;
  const auto unknown = [&result](std::string reason) {
    result.verdict = Verdict::Unknown;
    result.reason = std::move(reason);
  };
  if (!condition.is_boolean()) return unknown("condition is not boolean: " + condition.to_string());
  for (const BoundIndex& index : result.claim.indices) {
    // An index that shadows a symbol would make the symbol's range apply to it.
    for (const Symbol& s : symbols)
      if (s.name == index.name) return unknown("claim index " + index.name + " is also a declared symbol");
    if (index.bound.is_boolean()) return unknown("the bound of index " + index.name + " is not an integer");
  }
  std::vector<Symbol> declarations;
  if (std::string why = find_declarations(result.claim.symbols(), symbols, declarations); !why.empty())
    return unknown(why);

  try {
    z3::context ctx;
    Translator translator(ctx);
    // The indices range over [0, bound): a value outside is no counterexample. Their
    // bounds are translated first, so a bound that can divide by zero refutes too.
    z3::expr_vector index_ranges(ctx);
    for (const BoundIndex& index : result.claim.indices) {
      const z3::expr i = ctx.int_const(index.name.c_str());
      index_ranges.push_back(i >= 0);
      index_ranges.push_back(i < translator.translate(index.bound));
    }
    const z3::expr holds = translator.translate(condition);
    const z3::expr defined = translator.divisors_nonzero();
    z3::solver solver(ctx);
    // Only the claim's own symbols are constrained: declarations are independent, and an
    // unrelated symbol with an empty range would otherwise prove every claim vacuously.
    for (const Symbol& s : declarations) solver.add(translator.translate(range_constraint(s)));
    // For all indices: the negation asks for some index in range where it fails.
    if (!index_ranges.empty()) solver.add(z3::mk_and(index_ranges));
    solver.add(!(defined && holds));

    z3::check_result outcome;
    bool timed_out = false;
    if (options.timeout_ms > 0) {
      Watchdog watchdog(ctx, options.timeout_ms);
      outcome = solver.check();
      timed_out = watchdog.stop();
    } else {
      outcome = solver.check();
    }
    switch (outcome) {
      case z3::unsat: result.verdict = Verdict::Proved; return;
      case z3::unknown:
        if (timed_out) return unknown("z3: timeout after " + std::to_string(options.timeout_ms) + " ms");
        return unknown("z3: " + solver.reason_unknown());
      case z3::sat: break;
    }
    const z3::model model = solver.get_model();
    for (const Symbol& s : declarations) {
      int64_t value;
      if (!model.eval(ctx.int_const(s.name.c_str()), true).is_numeral_i64(value))
        return unknown("model value of " + s.name + " does not fit in 64 bits");
      result.counterexample[s.name] = value;
    }
    for (const BoundIndex& index : result.claim.indices) {
      int64_t value;
      if (!model.eval(ctx.int_const(index.name.c_str()), true).is_numeral_i64(value))
        return unknown("model value of index " + index.name + " does not fit in 64 bits");
      result.counterexample[index.name] = value;
    }
    // The indices of a counterexample must lie in their ranges (checked like the rest).
    for (const BoundIndex& index : result.claim.indices) {
      try {
        const auto bound = evaluate(index.bound, result.counterexample);
        const int64_t value = result.counterexample[index.name];
        if (!bound || value < 0 || value >= *bound) {
          result.counterexample.clear();
          return unknown("model check failed: index " + index.name + " outside [0, " + index.bound.to_string() + ")");
        }
      } catch (const EvalError&) {
        // A zero divisor in the bound: reported by the divisor loop below.
      }
    }
    // Z3's model is checked with evaluate(), so a translation bug shows up as unknown
    // instead of a wrong refutation.
    for (const Expr& divisor : translator.divisors()) {
      try {
        if (evaluate(divisor, result.counterexample) == 0) {
          result.verdict = Verdict::Refuted;
          result.reason = "division by zero: " + divisor.to_string() + " is 0";
          return;
        }
      } catch (const EvalError&) {
        // Either it contains a zero divisor of its own, which this loop also visits, or
        // it overflows, which evaluating the condition below reports.
      }
    }
    try {
      if (evaluate(condition, result.counterexample) == 0) {
        result.verdict = Verdict::Refuted;
        return;
      }
      unknown("model check failed: the condition holds at the counterexample");
    } catch (const EvalError& e) {
      unknown(std::string("model check failed: ") + e.what());
    }
    result.counterexample.clear();
  } catch (const z3::exception& e) {
    unknown(std::string("z3: ") + e.msg());
  }
}

std::string milliseconds(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", seconds * 1000);
  return buffer;
}

}  // namespace

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::Proved: return "proved";
    case Verdict::Refuted: return "refuted";
    case Verdict::Unknown: return "unknown";
  }
  return "?";
}

std::string ClaimResult::format() const {
  std::string out = std::string(to_string(verdict)) + ": " + claim.kind;
  if (!claim.subject.empty()) out += " of " + claim.subject;
  if (!claim.pass.empty()) out += " (" + claim.pass + ")";
  out += ": ";
  if (!claim.description.empty()) out += claim.description + " ";
  out += "[" + (claim.indices.empty() ? "" : claim.quantifier_text() + ": ") + claim.condition.to_string() + "]";
  if (verdict == Verdict::Refuted) {
    out += " counterexample";
    const char* separator = " ";
    for (const auto& [name, value] : counterexample) {
      out += separator + name + "=" + std::to_string(value);
      separator = ", ";
    }
  }
  if (!reason.empty()) out += " (" + reason + ")";
  return out;
}

size_t ProofReport::count(Verdict verdict) const {
  return static_cast<size_t>(
      std::count_if(results.begin(), results.end(), [verdict](const ClaimResult& r) { return r.verdict == verdict; }));
}

bool ProofReport::all_proved() const { return count(Verdict::Proved) == results.size(); }

double ProofReport::total_seconds() const {
  double total = 0;
  for (const auto& r : results) total += r.seconds;
  return total;
}

double ProofReport::max_seconds() const {
  double longest = 0;
  for (const auto& r : results) longest = std::max(longest, r.seconds);
  return longest;
}

std::string ProofReport::format() const {
  std::string out;
  for (const auto& r : results) {
    if (r.verdict != Verdict::Proved) out += r.format() + "\n";
  }
  out += std::to_string(results.size()) + " claims: " + std::to_string(count(Verdict::Proved)) + " proved, " +
         std::to_string(count(Verdict::Refuted)) + " refuted, " + std::to_string(count(Verdict::Unknown)) +
         " unknown in " + milliseconds(total_seconds()) + " ms (max " + milliseconds(max_seconds()) + " ms per claim)";
  if (duplicates_merged > 0) out += "; " + std::to_string(duplicates_merged) + " identical claims proved once";
  return out;
}

ClaimResult prove(const Claim& claim, const std::vector<Symbol>& symbols, const ProveOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  ClaimResult result;
  result.claim = claim;
  decide(result, symbols, options);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

ProofReport prove_all(const std::vector<Claim>& claims, const std::vector<Symbol>& symbols,
                      const ProveOptions& options) {
  ProofReport report;
  // Passes record the same guard at every site it protects (each chunked layer repeats
  // the split claim); Z3 answers once per distinct question.
  std::map<std::pair<std::string, std::string>, size_t> first_with;
  for (const Claim& claim : claims) {
    const auto key = std::make_pair(claim.kind, claim.quantifier_text() + claim.condition.to_string());
    const auto [it, fresh] = first_with.emplace(key, report.results.size());
    if (fresh) {
      report.results.push_back(prove(claim, symbols, options));
      continue;
    }
    ClaimResult shared = report.results[it->second];
    shared.claim = claim;
    shared.seconds = 0;
    report.results.push_back(std::move(shared));
    ++report.duplicates_merged;
  }
  return report;
}

std::string z3_version() {
  unsigned major = 0, minor = 0, build = 0, revision = 0;
  Z3_get_version(&major, &minor, &build, &revision);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(build);
}

}  // namespace passcheck::sym
