// Text form of a Graph: a readable listing, one node per line, that parses back to the
// same graph. print(parse(print(g))) == print(g) for every graph (a property test).
//
//   graph(
//       param %w1 : f32[4, 8],
//       arg %x : f32[2, 4]):
//     %mm : f32[2, 8] = aten::mm(%x, %w1)  #{seq=0}
//     %a : f32[1, 4], %b : f32[1, 4] = aten::split.Tensor(%x, 1, 0)
//     return (%mm)
//
// Types: dtype[sizes]{strides}@device (strides only when not contiguous, device only
// when not cpu), or int / float / bool / None. Node metadata follows "#{" with the keys
// of framework/ir/meta.h. Lines starting with '#' are comments.
#pragma once

#include "framework/ir/graph.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace passcheck::ir {

/// Malformed graph text; what() reads "<source>:<line>:<col>: <message>".
class ParseError : public std::runtime_error {
 public:
  ParseError(const std::string& source, int line, int column, const std::string& message);
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& message() const { return message_; }

 private:
  int line_;
  int column_;
  std::string message_;
};

/// Most dimensions a tensor type may have in graph text. PyTorch's CUDA kernels index at
/// most 25 dimensions (OffsetCalculator's MAX_DIMS) and NumPy 2 allows 64; a larger rank
/// is hostile input, refused at parse time before anything costs more than the cap.
inline constexpr size_t kMaxTensorRank = 64;
/// Deepest nesting of list arguments (`[[[...]]]`) that graph text may hold; the parser
/// is recursive and refuses deeper input instead of overflowing the stack.
inline constexpr int kMaxListDepth = 256;

std::string print_graph(const Graph& graph);
/// Parses graph text; throws ParseError naming the line and column of the problem.
std::unique_ptr<Graph> parse_graph(std::string_view text, const std::string& source_name = "<text>");

/// Text of one argument, one type, one node line (without indentation).
std::string print_arg(const Arg& arg);
/// print_arg(arg) appended to `out` (no string built per argument: hashing keys).
void append_arg_text(std::string& out, const Arg& arg);
std::string print_type(const Value& value);
std::string print_node(const Node& node);
/// Shortest decimal form that reads back to the same double ("1.0", "inf", "nan").
std::string format_double(double v);

}  // namespace passcheck::ir
