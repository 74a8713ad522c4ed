// The HTML pieces reports are made of, each testable alone: text escaping (every string
// that comes from a graph, a file name or a message goes through escape()), byte
// formatting, and the memory timeline as an inline SVG line chart. Nothing here refers
// to anything outside the document: no scripts, stylesheets, fonts or images by URL.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace passcheck::report {

/// `text` with &, <, >, " and ' replaced by character references: safe in element
/// content and in quoted attribute values.
std::string escape(const std::string& text);

/// "1.50 MiB", "812 B": a short byte count for tables and chart labels.
std::string short_bytes(int64_t bytes);

/// One line of a chart: a label and a value per x position (node index).
struct ChartSeries {
  std::string label;
  std::vector<int64_t> values;
};

struct ChartOptions {
  int width = 880;
  int height = 260;
  /// More points than this per series are reduced to this many buckets, each keeping
  /// its largest value (a peak is never drawn away).
  size_t max_points = 1500;
  std::string x_label = "node";
  /// What one point is, plural, for the legend ("nodes", "steps").
  std::string points_name = "nodes";
  std::string y_label = "live bytes";
};

/// An <svg> element: one polyline per series (class "series-K"), the axes with their
/// extremes labelled, a legend naming each series with its peak, and a <title> per
/// series for hover text. Series may differ in length; the x axis spans the longest.
std::string svg_line_chart(const std::vector<ChartSeries>& series, const ChartOptions& options = {});

/// Largest value of each of `buckets` consecutive slices of `values` (the whole vector
/// when it is not longer than `buckets`).
std::vector<int64_t> bucket_max(const std::vector<int64_t>& values, size_t buckets);

}  // namespace passcheck::report
