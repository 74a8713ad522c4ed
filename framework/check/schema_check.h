// Checks a parsed graph against the registered operator schemas before anything runs
// or proves it: every operator is known, its argument count fits the schema (required
// arguments present), the node defines as many outputs as the schema returns, and each
// declared output kind (`%y : int = ...`) is one the schema's return can produce. The
// IR cannot know schemas (it sees c10 only), so this lives above the executor.
// `passcheck run` and `passcheck prove` load graph files through it (cli::
// load_checked_graph_file), so both refuse the same bad input naming file:line:col.
#pragma once

#include "framework/ir/graph.h"

#include <string>
#include <vector>

namespace passcheck::check {

/// Every schema problem of `graph`, each "<source>:<line>:<col>: <message>" when the
/// node was parsed from text (the node's text quoted otherwise); empty when none.
std::vector<std::string> schema_problems(const ir::Graph& graph, const std::string& source);

/// Throws std::invalid_argument with the first problem ("(+N more)") when there is one.
void check_against_schemas(const ir::Graph& graph, const std::string& source);

}  // namespace passcheck::check
