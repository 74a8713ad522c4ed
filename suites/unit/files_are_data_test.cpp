// Graph, repro and archive files are data (docs/security.md): operators that reach
// outside the process are refused, subgraph nests are bounded before anything walks them,
// archives are checked before and after LibTorch reads them, writers never follow a link
// or replace a read-only file, and a repro's sim mesh is bounded. Each test states the
// hostile input and the refusal; the end-to-end cases (exit codes, messages, nothing
// touched outside the named outputs) are the hostile corpus (suites/hostile).
#include "framework/check/repro.h"
#include "framework/check/verifier.h"
#include "framework/dist/sim.h"
#include "framework/exec/executor.h"
#include "framework/exec/inputs.h"
#include "framework/exec/op_policy.h"
#include "framework/io/files.h"
#include "framework/ir/subgraph.h"
#include "framework/ir/text.h"
#include "suites/support/test_support.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace passcheck {
namespace {

#define EXPECT_CONTAINS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

std::unique_ptr<ir::Graph> parse_data_graph(const std::string& text) { return testing::parse_graph_text(text, "g.txt"); }

std::string executor_error(const std::string& text) {
  auto g = parse_data_graph(text);
  try {
    exec::Executor executor(*g);
  } catch (const exec::ExecError& e) {
    return e.what();
  }
  return "";
}

std::string verifier_issues(const ir::Graph& g) {
  std::string out;
  for (const check::VerifierIssue& issue : check::verify_graph(g)) out += issue.message + "\n";
  return out;
}

std::string parse_error(const std::string& text) {
  try {
    parse_data_graph(text);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(RefusedOperators, FromFileIsRefusedBeforeDispatchByTheExecutorAndTheVerifier) {
  const std::string text =
      "graph(arg %x : f32[4]):\n"
      "  %f : f32[4] = aten::from_file(\"/etc/passwd\", True, 4, 6, None, None, False)\n"
      "  %g : f32[4] = aten::fill_.Scalar(%f, 1.0)\n"
      "  return (%g)\n";
  EXPECT_CONTAINS(executor_error(text), "g.txt:2:17: aten::from_file is refused (file system)");
  EXPECT_CONTAINS(verifier_issues(*parse_data_graph(text)), "aten::from_file is refused (file system)");
}

TEST(RefusedOperators, UnsafeTrueIsRefusedAndUnsafeFalseRuns) {
  auto graph = [](const char* unsafe) {
    return std::string("graph(arg %x : f32[4], arg %l : i64[2]):\n"
                       "  %r : f32[2] = aten::segment_reduce(%x, \"sum\", %l, None, None, 0, ") +
           unsafe + ", None)\n  return (%r)\n";
  };
  EXPECT_CONTAINS(executor_error(graph("True")), "aten::segment_reduce argument 'unsafe': True is refused (unchecked)");
  EXPECT_EQ(executor_error(graph("False")), "");
  // The verifier's per-operator schema checker decides the same (it looks `unsafe` up once).
  EXPECT_CONTAINS(verifier_issues(*parse_data_graph(graph("True"))),
                  "aten::segment_reduce argument 'unsafe': True is refused (unchecked)");
  EXPECT_EQ(verifier_issues(*parse_data_graph(graph("False"))), "");
}

TEST(RefusedOperators, OperatorsLibTorchDoesNotRegisterAreStillRefusedByName) {
  // debugprims::load_tensor lives in Python only: the verifier refuses it by name, before
  // the executor would report an unknown operator.
  auto g = parse_data_graph("graph(arg %x : f32[2]):\n  %y : f32[2] = debugprims::load_tensor(\"w\", [2], [1])\n  return (%y)\n");
  EXPECT_CONTAINS(verifier_issues(*g), "debugprims::load_tensor is refused (file system)");
}

TEST(RefusedOperators, EveryRowOfTheTableIsListedInTheSecurityDoc) {
  std::ifstream doc(testing::source_path("docs/security.md"));
  std::stringstream text;
  text << doc.rdbuf();
  ASSERT_FALSE(text.str().empty());
  for (const exec::RefusedOperator& row : exec::refused_operators())
    EXPECT_CONTAINS(text.str(), "| `" + std::string(row.pattern) + "` | " + row.effect + " |");
}

// A chain of `depth` subgraphs, each calling the next `fanout` times in sequence.
std::string nest_text(int depth, int fanout) {
  std::string text;
  auto name = [](int i) {
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "s%05d", i);
    return std::string(buffer);
  };
  for (int i = 0; i < depth; ++i) {
    text += "subgraph " + name(i) + "(\n    arg %x : f32[2]):\n";
    std::string last = "%x";
    if (i + 1 == depth) {
      text += "  %r : f32[2] = aten::relu(%x)\n";
      last = "%r";
    } else {
      for (int k = 0; k < fanout; ++k) {
        text += "  %c" + std::to_string(k) + " : f32[2] = passcheck::invoke_subgraph(\"" + name(i + 1) + "\", [" +
                last + "])\n";
        last = "%c" + std::to_string(k);
      }
    }
    text += "  return (" + last + ")\n";
  }
  return text + "graph(arg %x : f32[2]):\n  %y : f32[2] = passcheck::invoke_subgraph(\"" + name(0) +
         "\", [%x])\n  return (%y)\n";
}

TEST(SubgraphNesting, DepthAndExpandedSizeAreCountedWithoutRecursion) {
  auto g = parse_data_graph(nest_text(5, 2));
  const ir::CallNesting nesting = ir::call_nesting(*g);
  EXPECT_EQ(nesting.depth, 5u);
  // 2 (call + output) ... each level: 2 calls of the next; the last level 1 relu.
  EXPECT_EQ(nesting.expanded_nodes, 1u + 2u + 4u + 8u + 16u + 16u);
  EXPECT_EQ(ir::nesting_problem(*g), "");
}

TEST(SubgraphNesting, AChainDeeperThanTheLimitIsAParseErrorAtTheFirstCall) {
  const std::string error = parse_error(nest_text(8000, 1));
  EXPECT_CONTAINS(error, "subgraph calls nest 8000 deep; passcheck runs at most 64 levels");
  EXPECT_CONTAINS(error, "g.txt:32002:17");
}

TEST(SubgraphNesting, AFanOutBombIsRefusedBeforeRunningOrInlining) {
  const std::string error = parse_error(nest_text(40, 2));
  EXPECT_CONTAINS(error, "subgraph calls expand to");
  EXPECT_CONTAINS(error, "a call tree that fans out");
}

TEST(SubgraphNesting, TheVerifierAndTheInlinerRefuseANestBuiltInMemory) {
  // Built by a pass, not parsed: the verifier, the executor and inline_subgraphs each
  // check the bounds themselves.
  auto g = parse_data_graph(nest_text(3, 2));
  ir::Graph* leaf = g->find_subgraph("s00002");
  ASSERT_NE(leaf, nullptr);
  // Deepen the nest by chaining 70 new bodies below the leaf.
  std::string previous = "s00002";
  for (int i = 3; i < 73; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "s%05d", i);
    auto body = ir::parse_graph("graph(arg %x : f32[2]):\n  %r : f32[2] = aten::relu(%x)\n  return (%r)\n", name);
    g->add_subgraph(name, std::move(body));
    ir::Graph* caller = g->find_subgraph(previous);
    ir::Node* call = ir::create_invoke_subgraph(*caller, name, {caller->inputs()[0]});
    caller->set_output(0, call->outputs()[0]);
    previous = name;
  }
  EXPECT_CONTAINS(verifier_issues(*g), "subgraph calls nest 73 deep");
  EXPECT_THROW(ir::inline_subgraphs(*g), ir::IrError);
  EXPECT_THROW(exec::Executor executor(*g), exec::ExecError);
}

// An inputs archive holding `value`, written by LibTorch's pickler.
std::string archive_of(const c10::IValue& value, const std::string& dir) {
  const std::vector<char> bytes = torch::jit::pickle_save(value);
  const std::string path = dir + "/inputs.pt";
  testing::write_text(path, std::string(bytes.begin(), bytes.end()));
  return path;
}

TEST(Archives, APickleNestedDeeperThanTheStackBoundIsRefusedBeforeLoading) {
  const std::string dir = testing::make_temp_dir();
  c10::impl::GenericList nested(c10::AnyType::get());
  for (int i = 0; i < 6000; ++i) {
    c10::impl::GenericList outer(c10::AnyType::get());
    outer.push_back(nested);
    nested = outer;
  }
  auto g = parse_data_graph("graph(arg %x : f32[2]):\n  return (%x)\n");
  try {
    exec::load_inputs(archive_of(nested, dir), g->inputs());
    FAIL() << "a 6000-deep archive was read";
  } catch (const std::invalid_argument& e) {
    EXPECT_CONTAINS(std::string(e.what()), "nests deeper than 4096 objects");
  }
}

TEST(Archives, AMemoIndexThatWouldSizeTheMemoTableToGigabytesIsRefused) {
  // Found by parser_fuzz_archive: LONG_BINPUT 1766089829 made LibTorch's unpickler
  // allocate a 28 GiB memo table before reading anything else.
  std::string zip;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t n) {
    zip.append(static_cast<const char*>(data), n);
    return n;
  });
  const std::string pickle = std::string("\x80\x02]r") + std::string("\x65\x64\x44\x69", 4) + ".";
  writer.writeRecord("data.pkl", pickle.data(), pickle.size());
  writer.writeEndOfFile();
  try {
    exec::read_archive(zip, "memo.pt");
    FAIL() << "a memo index of 1766089829 was read";
  } catch (const std::invalid_argument& e) {
    EXPECT_CONTAINS(std::string(e.what()), "memo.pt: data.pkl byte 3: memo index 1766089829");
  }
}

TEST(Archives, AnArchiveOfInputsWithinTheBoundsLoads) {
  const std::string dir = testing::make_temp_dir();
  c10::impl::GenericList inputs(c10::AnyType::get());
  inputs.push_back(at::arange(6, at::kFloat).reshape({2, 3}));
  auto g = parse_data_graph("graph(arg %x : f32[2, 3]):\n  return (%x)\n");
  std::vector<c10::IValue> loaded = exec::load_inputs(archive_of(inputs, dir), g->inputs());
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_TRUE(at::equal(loaded[0].toTensor(), at::arange(6, at::kFloat).reshape({2, 3})));
}

TEST(Archives, ATensorReachingPastItsStorageIsRefusedAfterLoading) {
  const std::string dir = testing::make_temp_dir();
  auto g = parse_data_graph("graph(arg %x : f32[64]):\n  return (%x)\n");
  // What a crafted file holds: sizes that claim 64 floats over a storage of 4. LibTorch's
  // pickler writes whatever the TensorImpl says, as an attacker's pickle would.
  at::Tensor small = at::zeros({4});
  small.unsafeGetTensorImpl()->set_sizes_contiguous({64});
  c10::impl::GenericList inputs(c10::AnyType::get());
  inputs.push_back(small);
  try {
    exec::load_inputs(archive_of(inputs, dir), g->inputs());
    FAIL() << "a tensor past its storage was read";
  } catch (const std::invalid_argument& e) {
    // LibTorch 2.15's unpickler checks this itself; older ones do not, and passcheck's
    // own check ("reaches byte 256 of a storage of 16 bytes") refuses it there.
    const std::string what = e.what();
    EXPECT_CONTAINS(what, "256");
    EXPECT_CONTAINS(what, "16 bytes");
  }
}

TEST(Writers, ALinkIsNeverWrittenThroughOrReplaced) {
  const std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/victim", "keep");
  ASSERT_EQ(::symlink((dir + "/victim").c_str(), (dir + "/out.graph").c_str()), 0);
  EXPECT_THROW(io::write_file(dir + "/out.graph", "x", "graph file"), io::FileError);
  EXPECT_THROW(io::write_file_atomically(dir + "/out.graph", "x", "repro file"), io::FileError);
  EXPECT_THROW(io::check_writable(dir + "/out.graph", "graph file"), io::FileError);
  EXPECT_EQ(io::read_file(dir + "/victim", "victim"), "keep");
  struct stat st {};
  ASSERT_EQ(::lstat((dir + "/out.graph").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST(Writers, AReadOnlyFileIsNeverReplacedAndAReplacedFileKeepsItsMode) {
  const std::string dir = testing::make_temp_dir();
  testing::write_text(dir + "/ro", "keep");
  ASSERT_EQ(::chmod((dir + "/ro").c_str(), 0444), 0);
  try {
    io::write_file_atomically(dir + "/ro", "x", "repro file");
    FAIL() << "a read-only file was replaced";
  } catch (const io::FileError& e) {
    EXPECT_CONTAINS(std::string(e.what()), "it is read-only");
  }
  EXPECT_EQ(io::read_file(dir + "/ro", "ro"), "keep");
  testing::write_text(dir + "/private", "old");
  ASSERT_EQ(::chmod((dir + "/private").c_str(), 0600), 0);
  io::write_file_atomically(dir + "/private", "new", "repro file");
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/private").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(io::read_file(dir + "/private", "private"), "new");
}

TEST(Writers, AnExistingOutputNeedsForce) {
  const std::string dir = testing::make_temp_dir();
  io::check_new_or_forced(dir + "/new.repro", "--out", false);
  testing::write_text(dir + "/old.repro", "x");
  try {
    io::check_new_or_forced(dir + "/old.repro", "--out", false);
    FAIL() << "an existing repro would be replaced";
  } catch (const io::FileError& e) {
    EXPECT_CONTAINS(std::string(e.what()), "already exists; pass --force to replace it");
  }
  io::check_new_or_forced(dir + "/old.repro", "--out", true);
}

TEST(ReproHeaders, ASimMeshIsNotAProgramCaseAndItsLineIsKept) {
  const std::string graph = "# original\ngraph(arg %x : f32[2]):\n  return (%x)\n";
  const std::string head = "#! passcheck-repro 1\n#! pipeline: dce\n#! seed: 1\n";
  try {
    check::parse_repro(head + "#! sim-mesh: a=2\n#! chunk: x\n#! program: y\n" + graph, "r.repro");
    FAIL() << "a sim-mesh header on a program case was read";
  } catch (const check::ReproError& e) {
    EXPECT_CONTAINS(std::string(e.what()), "a repro is one kind of case");
  }
  EXPECT_EQ(check::parse_repro(head + "#! sim-mesh: dp=2,tp=2\n" + graph, "r.repro").sim_mesh_line, 4);
}

TEST(SimMeshes, AMeshOfMoreRanksThanThreadsCanRunIsRefusedBeforeAnyStarts) {
  // A repro's `#! sim-mesh:` and `--mesh` both end here (a million ranks aborted in
  // std::thread before); replaying names the header's line (hostile corpus).
  EXPECT_THROW(dist::check_simulable(dist::DeviceMesh::parse("a=1048576")), dist::MeshError);
  EXPECT_THROW(dist::SimWorld(dist::DeviceMesh::parse("a=16,b=32")), dist::MeshError);
  EXPECT_NO_THROW(dist::check_simulable(dist::DeviceMesh::parse("dp=16,tp=16")));
}

TEST(GraphDevices, OnlyTheDevicesPasscheckRunsOnParse) {
  auto typed = [](const std::string& device) {
    return "graph(arg %x : f32[2]@" + device + "):\n  return (%x)\n";
  };
  EXPECT_CONTAINS(parse_error(typed("mps")), "invalid device 'mps' (a graph runs on cpu, cuda, cuda:N (N < 64) or meta)");
  EXPECT_CONTAINS(parse_error(typed("cuda:64")), "invalid device 'cuda:64'");
  EXPECT_EQ(parse_error(typed("cuda:7")), "");
  EXPECT_EQ(parse_error(typed("meta")), "");
}

TEST(GraphDevices, ADeviceArgumentThisMachineLacksIsNamedBeforeRunning) {
  if (testing::cuda_available()) GTEST_SKIP() << "checks the message of a machine without CUDA";
  EXPECT_CONTAINS(executor_error("graph(arg %x : f32[2]):\n"
                                 "  %y : f32[2]@cuda:7 = aten::_to_copy(%x, None, None, device(\"cuda:7\"), None, "
                                 "False, None)\n  return (%y)\n"),
                  "aten::_to_copy argument 'device': device cuda:7, but no CUDA device is available");
}

}  // namespace
}  // namespace passcheck
