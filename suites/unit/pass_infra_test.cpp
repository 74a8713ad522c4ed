// Unit tests of the pass infrastructure (framework/check/{pass,pipeline,verifier}.h):
// option validation and its messages, the registry's rules and catalogue, pipeline
// text parsing with its error columns, the gate Pipeline::run puts around every pass
// (changed claim checked both ways, exceptions turned into PassFailure, verifier after
// each pass, dump order), and the verifier on graphs broken by hand through the IR API.
// A pass that slips past this gate corrupts every later pass, so each failure mode is
// provoked deliberately here.
#include "framework/check/pass.h"
#include "framework/check/pipeline.h"
#include "framework/check/verifier.h"
#include "framework/ir/text.h"
#include "oracles/training_driver.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace passcheck::check {
namespace {

using ir::Arg;
using ir::Graph;
using ir::Node;
using ir::Value;

// Runs `fn` and returns the message of the exception of type E it throws ("" when it
// throws none; other exception types propagate and fail the test).
template <typename E, typename F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

PassInfo policy_pass_info() {
  PassInfo info;
  info.name = "sac-tag";
  info.summary = "Tag forward nodes";
  info.options = {{"policy", "which policy", "default", {"default", "eager", "full", "op"}},
                  {"save", "ops to save", "", {}},
                  {"every", "layer stride", "1", {}},
                  {"strict", "fail on unknown ops", "false", {"true", "false"}}};
  return info;
}

PassInfo plain_info(const std::string& name) {
  PassInfo info;
  info.name = name;
  info.summary = "test pass " + name;
  return info;
}

PassResult no_op(Graph&, const PassOptions&) { return PassResult::unchanged(); }

// A registry of stand-in passes, so the infrastructure is tested without depending on
// what the built-in passes do.
PassRegistry test_registry() {
  PassRegistry r;
  r.add(plain_info("dce"), no_op);
  r.add(plain_info("canonicalize"), no_op);
  r.add(policy_pass_info(), no_op);
  r.add(plain_info("remat"), no_op);
  return r;
}

// ---- PassOptions --------------------------------------------------------------------

TEST(PassOptions, FillsDefaultsAndKeepsGivenValues) {
  PassOptions o(policy_pass_info(), {{"policy", "eager"}});
  EXPECT_EQ(o.get("policy"), "eager");
  EXPECT_EQ(o.get("save"), "");
  EXPECT_EQ(o.get_int("every"), 1);
  EXPECT_FALSE(o.get_bool("strict"));
  EXPECT_EQ(o.values().size(), 4u);
}

TEST(PassOptions, UnknownOptionListsTheOptions) {
  EXPECT_EQ(error_of<PassConfigError>([] { PassOptions(policy_pass_info(), {{"polcy", "eager"}}); }),
            "pass 'sac-tag' has no option 'polcy' (options: every, policy, save, strict)");
  EXPECT_EQ(error_of<PassConfigError>([] { PassOptions(plain_info("dce"), {{"x", "1"}}); }),
            "pass 'dce' has no option 'x' (options: none)");
}

TEST(PassOptions, ValueOutsideChoicesListsTheChoices) {
  EXPECT_EQ(error_of<PassConfigError>([] { PassOptions(policy_pass_info(), {{"policy", "lazy"}}); }),
            "pass 'sac-tag' option 'policy' must be one of default, eager, full, op; got 'lazy'");
}

TEST(PassOptions, TypedGettersRejectMalformedValues) {
  PassOptions bad_int(policy_pass_info(), {{"every", "2x"}});
  EXPECT_EQ(error_of<PassConfigError>([&] { bad_int.get_int("every"); }),
            "pass 'sac-tag' option 'every' must be an integer; got '2x'");
  PassOptions empty_int(policy_pass_info(), {{"every", ""}});
  EXPECT_NE(error_of<PassConfigError>([&] { empty_int.get_int("every"); }), "");
  PassOptions huge(policy_pass_info(), {{"every", "99999999999999999999"}});
  EXPECT_NE(error_of<PassConfigError>([&] { huge.get_int("every"); }), "");
  PassOptions negative(policy_pass_info(), {{"every", "-3"}});
  EXPECT_EQ(negative.get_int("every"), -3);
  // "save" is free-form, so "maybe" is accepted and rejected only when read as a bool.
  PassOptions not_bool(policy_pass_info(), {{"save", "maybe"}});
  EXPECT_EQ(error_of<PassConfigError>([&] { not_bool.get_bool("save"); }),
            "pass 'sac-tag' option 'save' must be true or false; got 'maybe'");
  EXPECT_EQ(error_of<PassConfigError>([&] { not_bool.get("nope"); }),
            "pass 'sac-tag' has no option 'nope' (options: every, policy, save, strict)");
}

TEST(PassOptions, ListsSplitOnCommasAndTrim) {
  EXPECT_EQ(PassOptions(policy_pass_info(), {{"save", "mm, bmm,addmm"}}).get_list("save"),
            (std::vector<std::string>{"mm", "bmm", "addmm"}));
  EXPECT_TRUE(PassOptions(policy_pass_info(), {}).get_list("save").empty());
}

TEST(PassOptions, StrShowsOnlyNonDefaultValues) {
  EXPECT_EQ(PassOptions(policy_pass_info(), {}).str(), "");
  EXPECT_EQ(PassOptions(policy_pass_info(), {{"policy", "default"}}).str(), "");
  EXPECT_EQ(PassOptions(policy_pass_info(), {{"policy", "eager"}, {"every", "2"}}).str(), "{every=2,policy=eager}");
  // A list value is quoted so that the label parses back as a pipeline.
  EXPECT_EQ(PassOptions(policy_pass_info(), {{"save", "mm,bmm"}}).str(), "{save=\"mm,bmm\"}");
}

// ---- PassRegistry -------------------------------------------------------------------

TEST(PassRegistry, RejectsDuplicatesAndNamesThatAreNotKebabCase) {
  PassRegistry r = test_registry();
  EXPECT_EQ(error_of<PassConfigError>([&] { r.add(plain_info("dce"), no_op); }), "pass 'dce' is already registered");
  for (const char* bad : {"Remove-Detach", "remove_detach", "remove--detach", "-dce", "dce-", "", "9lives", "a b"})
    EXPECT_NE(error_of<PassConfigError>([&] { r.add(plain_info(bad), no_op); }).find("is not kebab-case"),
              std::string::npos)
        << bad;
  EXPECT_EQ(error_of<PassConfigError>([&] { r.add(plain_info("remove-detach2"), no_op); }), "");
}

TEST(PassRegistry, RejectsADefaultOutsideItsChoices) {
  PassRegistry r;
  PassInfo info = policy_pass_info();
  info.options[0].default_value = "lazy";
  EXPECT_EQ(error_of<PassConfigError>([&] { r.add(info, no_op); }),
            "pass 'sac-tag' option 'policy' default 'lazy' is not one of its choices (default, eager, full, op)");
  EXPECT_FALSE(r.contains("sac-tag"));
}

TEST(PassRegistry, UnknownPassListsTheKnownOnes) {
  PassRegistry r = test_registry();
  EXPECT_EQ(error_of<PassConfigError>([&] { r.get("dse"); }),
            "unknown pass 'dse' (known passes: canonicalize, dce, remat, sac-tag)");
}

TEST(PassRegistry, ListIsSortedByName) {
  PassRegistry r = test_registry();
  std::vector<std::string> names;
  for (const RegisteredPass* p : r.list()) names.push_back(p->info.name);
  EXPECT_EQ(names, (std::vector<std::string>{"canonicalize", "dce", "remat", "sac-tag"}));
}

TEST(PassRegistry, CatalogueDescribesEveryPassAndOption) {
  PassRegistry r = test_registry();
  std::string c = r.catalogue();
  EXPECT_NE(c.find("sac-tag\n  Tag forward nodes\n  numerics: preserves\n  idempotent: yes\n  options:\n"
                   "    policy (default: default; choices: default, eager, full, op): which policy\n"
                   "    save (default: \"\"): ops to save\n"),
            std::string::npos)
      << c;
  EXPECT_NE(c.find("dce\n  test pass dce\n  numerics: preserves\n  idempotent: yes\n  options: none\n"),
            std::string::npos)
      << c;
}

TEST(PassRegistry, GlobalHoldsEveryCleanupPassAndItsCatalogueNamesThem) {
  const PassRegistry& r = PassRegistry::global();
  std::string c = r.catalogue();
  for (const char* name : {"dce", "remove-detach", "remove-identity-view", "remove-b2b-transpose",
                           "remove-identity-slice", "normalize-views", "canonicalize", "cse"}) {
    ASSERT_TRUE(r.contains(name)) << name;
    EXPECT_EQ(r.get(name).info.numerics, NumericsEffect::Preserves) << name;
    EXPECT_TRUE(r.get(name).info.idempotent) << name;
  }
  // Every registered pass (cleanup and any other family) has a catalogue block.
  for (const RegisteredPass* p : r.list()) EXPECT_NE(c.find(p->info.name + "\n  "), std::string::npos) << p->info.name;
}

TEST(NumericsEffect, Names) {
  EXPECT_STREQ(to_string(NumericsEffect::Preserves), "preserves");
  EXPECT_STREQ(to_string(NumericsEffect::MemoryOnly), "memory-only");
  EXPECT_STREQ(to_string(NumericsEffect::Changes), "changes");
}

// ---- parse_pipeline -----------------------------------------------------------------

TEST(ParsePipeline, NamesOptionsAndWhitespace) {
  PassRegistry r = test_registry();
  auto p = parse_pipeline(" dce , canonicalize,sac-tag { policy = eager , save=mm },remat ", r);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].name, "dce");
  EXPECT_TRUE(p[0].options.empty());
  EXPECT_EQ(p[2].name, "sac-tag");
  EXPECT_EQ(p[2].options, (std::map<std::string, std::string>{{"policy", "eager"}, {"save", "mm"}}));
  EXPECT_EQ(p[3].name, "remat");
  EXPECT_TRUE(parse_pipeline("   ", r).empty());
  EXPECT_EQ(parse_pipeline("dce{}", r).at(0).options.size(), 0u);
}

TEST(ParsePipeline, ListAndQuotedValuesKeepTheirCommas) {
  PassRegistry r = test_registry();
  auto p = parse_pipeline("sac-tag{save=[mm,bmm],policy=\"op\"}", r);
  EXPECT_EQ(p.at(0).options.at("save"), "mm,bmm");
  EXPECT_EQ(p.at(0).options.at("policy"), "op");
  // str() quotes such values, so it parses back to the same invocation.
  EXPECT_EQ(p.at(0).str(), "sac-tag{policy=op,save=\"mm,bmm\"}");
  EXPECT_EQ(parse_pipeline(p.at(0).str(), r).at(0).options, p.at(0).options);
}

TEST(ParsePipeline, SyntaxErrorsNameTheColumn) {
  PassRegistry r = test_registry();
  auto err = [&](const std::string& text) { return error_of<PassConfigError>([&] { parse_pipeline(text, r); }); };
  EXPECT_EQ(err("dce,,remat"), "pipeline \"dce,,remat\": column 5: expected a pass name, got ','");
  EXPECT_EQ(err("dce,"), "pipeline \"dce,\": column 5: expected a pass name, got the end");
  EXPECT_EQ(err("dce remat"), "pipeline \"dce remat\": column 5: expected ',' or the end of the pipeline, got 'r'");
  EXPECT_EQ(err("sac-tag{policy}"), "pipeline \"sac-tag{policy}\": column 15: expected '=' after option 'policy', got '}'");
  EXPECT_EQ(err("sac-tag{policy=eager"),
            "pipeline \"sac-tag{policy=eager\": column 21: expected ',' or '}' in the options of 'sac-tag', got the end");
  EXPECT_EQ(err("sac-tag{policy=}"), "pipeline \"sac-tag{policy=}\": column 16: expected an option value, got '}'");
  EXPECT_EQ(err("sac-tag{policy=eager,policy=op}"),
            "pipeline \"sac-tag{policy=eager,policy=op}\": column 22: option 'policy' given twice");
  EXPECT_EQ(err("sac-tag{save=\"mm}"), "pipeline \"sac-tag{save=\"mm}\": column 14: unterminated quoted value");
  EXPECT_EQ(err("sac-tag{save=[mm}"), "pipeline \"sac-tag{save=[mm}\": column 17: unexpected '}' in a list value");
}

TEST(ParsePipeline, UnknownPassAndBadOptionsAreReportedWithTheirColumn) {
  PassRegistry r = test_registry();
  auto err = [&](const std::string& text) { return error_of<PassConfigError>([&] { parse_pipeline(text, r); }); };
  EXPECT_EQ(err("dce,remta"),
            "pipeline \"dce,remta\": column 5: unknown pass 'remta' (known passes: canonicalize, dce, remat, sac-tag)");
  EXPECT_EQ(err("sac-tag{policy=lazy}"),
            "pipeline \"sac-tag{policy=lazy}\": column 8: pass 'sac-tag' option 'policy' must be one of default, "
            "eager, full, op; got 'lazy'");
  EXPECT_EQ(err("dce{aggressive=true}"),
            "pipeline \"dce{aggressive=true}\": column 4: pass 'dce' has no option 'aggressive' (options: none)");
}

TEST(Pipeline, StrRoundTripsAndLabelsShowNonDefaultOptions) {
  PassRegistry r = test_registry();
  Pipeline p = Pipeline::parse("dce, sac-tag{policy=eager, every=1}, remat", r);
  EXPECT_EQ(p.str(), "dce,sac-tag{every=1,policy=eager},remat");
  Graph g;
  auto records = p.run(g);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[1].pass, "sac-tag{policy=eager}");  // every=1 is the default
}

TEST(Pipeline, ConstructorValidatesInvocations) {
  PassRegistry r = test_registry();
  EXPECT_EQ(error_of<PassConfigError>([&] { Pipeline({{"sac-tag", {{"bogus", "1"}}}}, r); }),
            "pass 'sac-tag' has no option 'bogus' (options: every, policy, save, strict)");
  EXPECT_NE(error_of<PassConfigError>([&] { Pipeline({{"nope", {}}}, r); }), "");
}

// ---- Pipeline::run ------------------------------------------------------------------

const char* kSmallGraph = R"(graph(
    param %w : f32[4, 4],
    arg %x : f32[2, 4]):
  %mm : f32[2, 4] = aten::mm(%x, %w)
  %relu : f32[2, 4] = aten::relu(%mm)
  %sum : f32[] = aten::sum(%relu, None)  #{phase=loss}
  %ones_like : f32[] = aten::ones_like(%sum, None, None, None, None, torch.contiguous_format)  #{phase=backward}
  return (%sum, %ones_like)
)";

std::unique_ptr<Graph> small_graph() { return ir::parse_graph(kSmallGraph, "small.graph"); }

// Registers `fn` as the only pass of a fresh registry and runs it once.
std::vector<PassRecord> run_one(Graph& g, PassFunction fn, const PipelineOptions& options = {}) {
  PassRegistry r;
  r.add(plain_info("under-test"), std::move(fn));
  return Pipeline::parse("under-test", r).run(g, options);
}

Node* find_node(const Graph& g, const std::string& op) {
  for (Node* n : g.nodes())
    if (n->op() == op) return n;
  return nullptr;
}

// Renames the mm output: a real change, found by the hash.
PassResult rename_mm(Graph& g) {
  g.rename(find_node(g, "aten::mm")->output(), "renamed");
  PassResult r;
  r.changed = true;
  r.stats["renamed"] = 1;
  return r;
}

TEST(PipelineRun, RecordsNodesStatsAndTime) {
  auto g = small_graph();
  auto records = run_one(*g, [](Graph& g, const PassOptions&) { return rename_mm(g); });
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].pass, "under-test");
  EXPECT_EQ(records[0].nodes_before, 4u);
  EXPECT_EQ(records[0].nodes_after, 4u);
  EXPECT_TRUE(records[0].changed);
  EXPECT_EQ(records[0].stats.at("renamed"), 1);
  EXPECT_GE(records[0].seconds, 0.0);
}

TEST(PipelineRun, CatchesAPassThatHidesAChange) {
  auto g = small_graph();
  std::string message = error_of<PassFailure>([&] {
    run_one(*g, [](Graph& g, const PassOptions&) {
      rename_mm(g);
      return PassResult::unchanged();
    });
  });
  EXPECT_EQ(message, "failed after under-test: reported no change but the graph changed");
}

// The gate skips the hash only when the change log is empty: a pass that asks for a
// node's metadata for writing and leaves it as it was is hashed, and found unchanged.
TEST(PipelineRun, AcceptsAPassThatTouchesANodeWithoutChangingIt) {
  auto g = small_graph();
  auto records = run_one(*g, [](Graph& g, const PassOptions&) {
    g.first_node()->mutable_meta();
    return PassResult::unchanged();
  });
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].changed);
}

// A change inside a subgraph body lands in the body's log, not the top graph's: the gate
// must read both before it trusts an empty log (the bodies' logs are emptied first, so
// only this pass's change is in them).
TEST(PipelineRun, CatchesAPassThatHidesAChangeInASubgraph) {
  auto g = ir::parse_graph(R"(subgraph body(
    arg %a : f32[2]):
  %n : f32[2] = aten::neg(%a)
  return (%n)
graph(
    arg %x : f32[2]):
  %y : f32[2] = passcheck::invoke_subgraph("body", [%x])
  return (%y)
)",
                           "nested.graph");
  g->clear_changes();
  for (const auto& entry : g->subgraphs()) entry.second->clear_changes();
  PassRegistry r;
  PassInfo info = plain_info("under-test");
  info.handles_subgraphs = true;
  r.add(info, [](Graph& g, const PassOptions&) {
    Graph* body = g.find_subgraph("body");
    body->rename(body->first_node()->output(), "renamed");
    return PassResult::unchanged();
  });
  std::string message = error_of<PassFailure>([&] { Pipeline::parse("under-test", r).run(*g); });
  EXPECT_EQ(message, "failed after under-test: reported no change but the graph changed");
}

// PipelineOptions::graph_hash: a run leaves the hash of the graph as its last gate left
// it (the next run starts from there instead of hashing again), and a failed run leaves
// none to trust.
TEST(PipelineRun, CarriesTheHashOfTheGraphItLeaves) {
  auto g = small_graph();
  std::optional<uint64_t> hash;
  PipelineOptions options;
  options.graph_hash = &hash;
  run_one(*g, [](Graph& g, const PassOptions&) { return rename_mm(g); }, options);
  ASSERT_TRUE(hash.has_value());
  EXPECT_EQ(*hash, g->hash());
  run_one(*g, [](Graph&, const PassOptions&) { return PassResult::unchanged(); }, options);
  EXPECT_EQ(hash, std::optional<uint64_t>(g->hash()));
  EXPECT_THROW(run_one(
                   *g,
                   [](Graph& g, const PassOptions&) {
                     g.rename(find_node(g, "aten::mm")->output(), "renamed_again");
                     return PassResult::unchanged();
                   },
                   options),
               PassFailure);
  EXPECT_FALSE(hash.has_value());
}

TEST(PipelineRun, CatchesAPassThatClaimsAChangeItDidNotMake) {
  auto g = small_graph();
  try {
    run_one(*g, [](Graph&, const PassOptions&) {
      PassResult r;
      r.changed = true;
      return r;
    });
    FAIL() << "expected PassFailure";
  } catch (const PassFailure& e) {
    EXPECT_STREQ(e.what(), "failed after under-test: reported a change but the graph is identical");
    EXPECT_EQ(e.pass(), "under-test");
  }
}

TEST(PipelineRun, ChangedClaimCheckCanBeSwitchedOff) {
  auto g = small_graph();
  PipelineOptions options;
  options.check_changed_claim = false;
  auto records = run_one(
      *g,
      [](Graph&, const PassOptions&) {
        PassResult r;
        r.changed = true;
        return r;
      },
      options);
  EXPECT_TRUE(records.at(0).changed);
}

TEST(PipelineRun, TurnsAThrowIntoPassFailure) {
  auto g = small_graph();
  EXPECT_EQ(error_of<PassFailure>([&] {
              run_one(*g, [](Graph& g, const PassOptions&) -> PassResult {
                g.erase(find_node(g, "aten::mm"));  // still used: IrError
                return {};
              });
            }),
            "failed after under-test: the pass threw: cannot erase node %mm = aten::mm: its output still has 1 use(s)");
}

TEST(PipelineRun, RunsTheVerifierAfterThePass) {
  auto g = small_graph();
  std::string message = error_of<PassFailure>([&] {
    run_one(*g, [](Graph& g, const PassOptions&) {
      // relu now runs before the mm that defines its operand.
      find_node(g, "aten::relu")->move_before(g.first_node());
      PassResult r;
      r.changed = true;
      return r;
    });
  });
  EXPECT_EQ(message,
            "failed after under-test: node `%relu : f32[2, 4] = aten::relu(%mm)`: operand %mm is used before its "
            "definition (%mm defined by `%mm : f32[2, 4] = aten::mm(%x, %w)`, later in the graph)");
}

TEST(PipelineRun, VerifierCatchesAForwardNodeInsertedAfterTheBackward) {
  auto g = small_graph();
  std::string message = error_of<PassFailure>([&] {
    run_one(*g, [](Graph& g, const PassOptions&) {
      Node* neg = g.create("aten::neg", {Arg::of(g.find_value("mm"))});  // appended: after ones_like
      neg->add_output(ir::ValueType::Tensor, g.find_value("mm")->meta(), "late");
      PassResult r;
      r.changed = true;
      return r;
    });
  });
  EXPECT_EQ(message,
            "failed after under-test: node `%late : f32[2, 4] = aten::neg(%mm)`: forward node after the first "
            "backward node `%ones_like : f32[] = aten::ones_like(%sum, None, None, None, None, torch.contiguous_format)"
            "  #{phase=backward}`");
}

TEST(PipelineRun, VerifierCanBeSwitchedOff) {
  auto g = small_graph();
  PipelineOptions options;
  options.verify_each = false;
  auto records = run_one(
      *g,
      [](Graph& g, const PassOptions&) {
        find_node(g, "aten::relu")->move_before(g.first_node());
        PassResult r;
        r.changed = true;
        return r;
      },
      options);
  EXPECT_EQ(records.size(), 1u);
  EXPECT_FALSE(verify_graph(*g).empty());
}

TEST(PipelineRun, StopsAtTheFirstFailingPass) {
  PassRegistry r;
  int runs = 0;
  r.add(plain_info("liar"), [&](Graph&, const PassOptions&) {
    ++runs;
    PassResult res;
    res.changed = true;
    return res;
  });
  r.add(plain_info("counter"), [&](Graph&, const PassOptions&) {
    ++runs;
    return PassResult::unchanged();
  });
  auto g = small_graph();
  EXPECT_THROW(Pipeline::parse("counter,liar,counter", r).run(*g), PassFailure);
  EXPECT_EQ(runs, 2);
}

TEST(PipelineRun, DumpsBeforeAndAfterEachPassInOrder) {
  PassRegistry r;
  r.add(plain_info("rename"), [](Graph& g, const PassOptions&) { return rename_mm(g); });
  r.add(plain_info("keep"), no_op);
  auto g = small_graph();
  std::vector<std::string> calls;
  PipelineOptions options;
  options.dump = [&](const std::string& when, const std::string& pass, const Graph& graph) {
    calls.push_back(when + " " + pass + (graph.find_value("renamed") ? " renamed" : ""));
  };
  Pipeline::parse("keep,rename,keep", r).run(*g, options);
  EXPECT_EQ(calls, (std::vector<std::string>{"before keep", "after keep", "before rename", "after rename renamed",
                                             "before keep renamed", "after keep renamed"}));
}

// ---- verify_graph -------------------------------------------------------------------

std::vector<std::string> issues_of(const Graph& g) {
  std::vector<std::string> out;
  for (const VerifierIssue& i : verify_graph(g)) out.push_back(i.message);
  return out;
}

TEST(Verifier, ParsedAndTracedGraphsAreClean) {
  EXPECT_TRUE(issues_of(*small_graph()).empty());
  auto subject = models::make_subject("two_matmul");
  trace::TracedProgram program = oracles::trace_subject(*subject, subject->batch(0), false);
  EXPECT_TRUE(issues_of(program.graph()).empty());
  EXPECT_NO_THROW(verify_or_throw(program.graph(), "traced"));
}

TEST(Verifier, FindsAUseBeforeItsDefinition) {
  auto g = small_graph();
  find_node(*g, "aten::mm")->move_after(find_node(*g, "aten::relu"));
  EXPECT_EQ(issues_of(*g), (std::vector<std::string>{
                               "node `%relu : f32[2, 4] = aten::relu(%mm)`: operand %mm is used before its definition "
                               "(%mm defined by `%mm : f32[2, 4] = aten::mm(%x, %w)`, later in the graph)"}));
}

TEST(Verifier, FindsANodeUsingItsOwnOutput) {
  auto g = small_graph();
  Node* relu = find_node(*g, "aten::relu");
  relu->replace_operand(0, relu->output());
  auto issues = issues_of(*g);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].find("operand %relu is used before its definition"), std::string::npos) << issues[0];
}

TEST(Verifier, FindsOperandsAndOutputsFromAnotherGraph) {
  auto g = small_graph();
  Graph other;
  Value* foreign = other.add_input("foreign", ir::ValueType::Tensor, g->find_value("x")->meta());
  // replace_all_uses_with does not check graphs: exactly the slip a pass could make.
  g->find_value("x")->replace_all_uses_with(foreign);
  g->find_value("ones_like")->replace_all_uses_with(foreign);
  auto issues = issues_of(*g);
  ASSERT_EQ(issues.size(), 2u);
  EXPECT_EQ(issues[0], "node `%mm : f32[2, 4] = aten::mm(%foreign, %w)`: operand %foreign belongs to another graph");
  EXPECT_EQ(issues[1], "graph output 1 (%foreign) is not defined in this graph");
  // The other graph sees uses by nodes it does not hold.
  auto other_issues = issues_of(other);
  ASSERT_EQ(other_issues.size(), 2u);
  EXPECT_EQ(other_issues[0], "%foreign lists a use by a node that is not in the graph");
  EXPECT_EQ(other_issues[1], "%foreign lists a use as graph output 1 but that output is not %foreign");
}

TEST(Verifier, FindsRecomputePolicyOnABackwardNode) {
  auto g = small_graph();
  find_node(*g, "aten::ones_like")->mutable_meta().recompute = ir::RecomputePolicy::MustSave;
  auto issues = issues_of(*g);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0],
            "node `%ones_like : f32[] = aten::ones_like(%sum, None, None, None, None, torch.contiguous_format)  "
            "#{phase=backward, recompute=must_save}`: recompute policy must_save on a backward node (only forward "
            "and loss nodes carry one)");
}

TEST(Verifier, AllowsRecomputedDuplicatesInTheBackward) {
  // A rematerialized copy of mm: a forward-phase node with its policy, after the
  // backward started, marked as a duplicate. Both exemptions apply to it.
  auto g = ir::parse_graph(R"(graph(param %w : f32[4, 4], arg %x : f32[2, 4]):
  %mm : f32[2, 4] = aten::mm(%x, %w)  #{recompute=must_recompute}
  %sum : f32[] = aten::sum(%mm, None)  #{phase=loss}
  %ones_like : f32[] = aten::ones_like(%sum, None, None, None, None, torch.contiguous_format)  #{phase=backward}
  %mm_r : f32[2, 4] = aten::mm(%x, %w)  #{recompute=must_recompute, custom={"recomputed_from": "mm"}}
  %mul : f32[2, 4] = aten::mul.Tensor(%mm_r, %ones_like)  #{phase=backward}
  %mm_b : f32[2, 4] = aten::mm(%x, %w)  #{phase=backward, recompute=must_recompute, custom={"recomputed_from": "mm"}}
  return (%sum, %mul, %mm_b)
)");
  EXPECT_TRUE(issues_of(*g).empty()) << issues_of(*g).front();
  // Without the marker the same node is a forward node after the backward.
  g->find_value("mm_r")->producer()->mutable_meta().custom.clear();
  auto issues = issues_of(*g);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_NE(issues[0].find("forward node after the first backward node"), std::string::npos) << issues[0];
}

TEST(Verifier, FindsANegativeAcRegion) {
  auto g = small_graph();
  find_node(*g, "aten::mm")->mutable_meta().ac_region_id = -1;
  auto issues = issues_of(*g);
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0], "node `%mm : f32[2, 4] = aten::mm(%x, %w)  #{ac_region=-1}`: ac_region -1 is negative");
  find_node(*g, "aten::mm")->mutable_meta().ac_region_id = 0;
  EXPECT_TRUE(issues_of(*g).empty());
}

TEST(Verifier, FindsALossNodeAfterTheBackwardAndABackwardNodeAfterTheOptimizer) {
  auto g = ir::parse_graph(R"(graph(param %w : f32[4], arg %x : f32[4]):
  %mul : f32[4] = aten::mul.Tensor(%x, %w)
  %neg : f32[4] = aten::neg(%mul)  #{phase=backward}
  %sum : f32[] = aten::sum(%mul, None)  #{phase=loss}
  %sub : f32[4] = aten::sub.Tensor(%w, %neg, 1)  #{phase=optimizer}
  %neg_1 : f32[4] = aten::neg(%neg)  #{phase=backward}
  return (%sum, %sub, %neg_1)
)");
  auto issues = issues_of(*g);
  ASSERT_EQ(issues.size(), 2u);
  EXPECT_EQ(issues[0],
            "node `%sum : f32[] = aten::sum(%mul, None)  #{phase=loss}`: loss node after the first backward node "
            "`%neg : f32[4] = aten::neg(%mul)  #{phase=backward}`");
  EXPECT_EQ(issues[1],
            "node `%neg_1 : f32[4] = aten::neg(%neg)  #{phase=backward}`: backward node after the optimizer node "
            "`%sub : f32[4] = aten::sub.Tensor(%w, %neg, 1)  #{phase=optimizer}`");
}

TEST(Verifier, AcceptsAGraphWithoutOutputsOrNodes) {
  Graph empty;
  EXPECT_TRUE(issues_of(empty).empty());
  auto g = ir::parse_graph("graph(arg %x : f32[2]):\n  %y : f32[2] = aten::neg(%x)\n  return ()\n");
  EXPECT_TRUE(issues_of(*g).empty());
}

TEST(Verifier, VerifyOrThrowNamesTheContextAndCountsTheRest) {
  auto g = small_graph();
  find_node(*g, "aten::mm")->mutable_meta().ac_region_id = -1;
  find_node(*g, "aten::relu")->mutable_meta().ac_region_id = -2;
  EXPECT_EQ(error_of<std::runtime_error>([&] { verify_or_throw(*g, "after my-pass"); }),
            "after my-pass: node `%mm : f32[2, 4] = aten::mm(%x, %w)  #{ac_region=-1}`: ac_region -1 is negative "
            "(+1 more)");
}

// A mutant may only break what its pass declares: an unknown guard, rule or injectable
// bug is an error naming the pass and the name, not a fault that silently does nothing.
TEST(InjectedFaults, EveryFaultMustNameADeclaredDecisionOrBug) {
  const PassInfo& remat = PassRegistry::global().get("remat").info;
  InjectedFaults declared;
  declared.disabled_guards = {"must-stay-in-forward"};
  declared.widened_rules = {"erase-original"};
  declared.injected_bugs = {"fresh-rng-on-replay"};
  EXPECT_NO_THROW(check_faults_declared(remat, declared));
  InjectedFaults bug;
  bug.injected_bugs = {"fresh-rng"};
  EXPECT_EQ(error_of<PassConfigError>([&] { check_faults_declared(remat, bug); }),
            "pass 'remat' declares no injectable bug 'fresh-rng'");
  InjectedFaults guard;
  guard.disabled_guards = {"fresh-rng-on-replay"};  // a bug's name is no guard
  EXPECT_EQ(error_of<PassConfigError>([&] { check_faults_declared(remat, guard); }),
            "pass 'remat' declares no guard 'fresh-rng-on-replay'");
  InjectedFaults rule;
  rule.widened_rules = {"merge-duplicate"};  // cse's rule, not remat's
  EXPECT_EQ(error_of<PassConfigError>([&] { check_faults_declared(remat, rule); }),
            "pass 'remat' declares no rule 'merge-duplicate'");
}

// Without injected faults the bug switches are off: a pipeline built from text never
// reproduces a historical bug, and a declared bug only acts when a fault names it.
TEST(InjectedFaults, AnInjectedBugActsOnlyInTheCallThatCarriesIt) {
  const char* text = R"(graph(param %w : f32[4, 4], arg %x : f32[4, 4]):
  %a : f32[4, 4] = aten::mm(%x, %w)  #{recompute=prefer_recompute}
  %s : f32[] = aten::sum(%x, None)  #{phase=loss, fqn="loss"}
  %g : f32[4, 4] = aten::mul.Tensor(%a, %x)  #{phase=backward}
  return (%s, %g)
)";
  const RegisteredPass& remat = PassRegistry::global().get("remat");
  auto real = ir::parse_graph(text, "real.graph");
  EXPECT_EQ(remat.run(*real, PassOptions(remat.info, {})).stats.at("recomputed_nodes"), 1);
  InjectedFaults ignore;
  ignore.injected_bugs = {"ignore-prefer-recompute"};
  auto buggy = ir::parse_graph(text, "buggy.graph");
  EXPECT_FALSE(remat.run(*buggy, PassOptions(remat.info, {}).with_faults(ignore)).changed);
  auto again = ir::parse_graph(text, "again.graph");
  EXPECT_EQ(remat.run(*again, PassOptions(remat.info, {})).stats.at("recomputed_nodes"), 1);
}

}  // namespace
}  // namespace passcheck::check
