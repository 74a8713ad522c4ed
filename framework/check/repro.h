// Repro files: one text file holding everything needed to replay a fuzzing failure
// without the generator — the passcheck version, the pipeline, the input seed, the
// property that failed with its message, the replay command, and the graph (the
// original and, once shrunk, the minimized one) in the text form of
// docs/graph-format.md. Metadata lines read "#! key: value", which the graph parser
// skips as comments; docs/reproducing-a-failure.md describes the anatomy.
#pragma once

#include "framework/check/pass_properties.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace passcheck::check {

/// A malformed or unreadable repro file; what() reads "<path>:<line>: <message>" (line 0:
/// the file could not be read, and the message names it).
class ReproError : public std::runtime_error {
 public:
  ReproError(const std::string& path, int line, const std::string& message)
      : std::runtime_error(line > 0 ? path + ":" + std::to_string(line) + ": " + message : message), line_(line) {}
  int line() const { return line_; }

 private:
  int line_;
};

struct Repro {
  std::string version;          ///< passcheck version that wrote the file
  std::string status = "pending";  ///< pending, failed, crash, timeout, passed
  std::string pipeline;         ///< the pipeline text replayed
  /// Extra pass sets the pipeline needs: "mutants" (suites/mutants), "test" (test-only passes).
  std::vector<std::string> registries;
  uint64_t seed = 0;            ///< exec::make_inputs seed
  int64_t int_high = 2;         ///< exec::InputOptions::int_high
  std::string case_description; ///< where the graph came from (one line)
  std::string property;         ///< pass-properties, remat-properties, crash, timeout ("" while pending)
  std::vector<std::string> messages;  ///< the violations (one line each)
  /// The case's time limit when it timed out ("#! timeout-ms:"; 0: none recorded), so a
  /// replay of a hanging pass ends after the same limit.
  int64_t timeout_ms = 0;
  /// Chunk cases (passcheck fuzz --chunk): the chunk configuration (gen::ChunkConfig
  /// text) and the program (gen::encode_spec text); seed is then the subject seed and the
  /// pipeline "<chunk pass>,<concretize pass>". Replayed by `passcheck repro` through the
  /// program generator, not by replay() below; empty for graph cases.
  std::string chunk;
  std::string program;
  bool is_chunk_case() const { return !chunk.empty(); }
  /// Sim-mesh cases (passcheck fuzz --mix ...,sim-mesh): the mesh ("a=2,b=3") every rank
  /// of which runs the graph, in threads of one process; the pipeline carries the pass's
  /// options. Replayed by `passcheck repro` through campaign::replay_sim_mesh_case; empty
  /// for other cases.
  std::string sim_mesh;
  int sim_mesh_line = 0;  ///< its header line, for messages
  bool is_sim_mesh_case() const { return !sim_mesh.empty(); }
  std::string original;         ///< graph text as generated
  std::string minimized;        ///< graph text after shrinking ("" when not minimized)
  /// The graph a replay runs: the minimized one when present.
  const std::string& graph_text() const { return minimized.empty() ? original : minimized; }
  /// Line of the file where graph_text() begins (0 when not read from a file), so
  /// errors in the graph name the file's line.
  int original_first_line = 0;
  int minimized_first_line = 0;
  int graph_first_line() const { return minimized.empty() ? original_first_line : minimized_first_line; }
};

/// The repro file text; `path` goes into the replay command line.
std::string format_repro(const Repro& repro, const std::string& path);
/// Writes atomically (temporary file + rename), so a crash never leaves half a file.
/// `sync` false skips the fsync: the file is complete for any process that reads it
/// later (a crash of the writer cannot lose it), only not yet safe from a power cut,
/// which is all a campaign's pending repro needs.
void write_repro(const std::string& path, const Repro& repro, bool sync = true);
/// The pending repro of a case, written into the file the campaign claimed for it
/// (created empty with O_EXCL by this campaign, so nothing else's): in place, one write,
/// no temporary file, no rename, no fsync; it is complete in the file system before the
/// case's passes run. Falls back to write_repro(path, repro, false) when the file cannot
/// be opened for writing.
void write_claimed_repro(const std::string& path, const Repro& repro);
/// Parses repro text; throws ReproError naming the line (graph errors included).
Repro parse_repro(const std::string& text, const std::string& path = "<repro>");
/// Reads and parses a repro file; throws ReproError (line 0 when it cannot be opened).
Repro read_repro(const std::string& path);

/// Whether `pipeline` runs the remat pass or a mutant of it (remat properties apply).
bool pipeline_has_remat(const std::string& pipeline, const PassRegistry& registry);

/// Runs check_pass_properties (plus check_remat_properties when the pipeline has remat)
/// on the repro's graph with exec::make_inputs(graph, {seed, int_high}). Throws
/// std::invalid_argument for a chunk case (it needs the program, not only the graph).
PassPropertyReport replay(const Repro& repro, const PassRegistry& registry);
/// Same on an explicit graph and pipeline (what the fuzzer and the minimizer run).
PassPropertyReport check_case(const ir::Graph& graph, const std::string& pipeline, uint64_t seed, int64_t int_high,
                              const PassRegistry& registry);
/// Which property family a violation message belongs to.
std::string property_of(const std::string& violation);

}  // namespace passcheck::check
