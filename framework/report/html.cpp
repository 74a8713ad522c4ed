// HTML escaping, byte formatting and the inline SVG chart of reports (see html.h).
#include "framework/report/html.h"

#include <algorithm>
#include <cstdio>

namespace passcheck::report {

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string short_bytes(int64_t bytes) {
  char buf[48];
  const double b = static_cast<double>(bytes);
  if (bytes < 0) std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  else if (bytes < 1024) std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  else if (bytes < (int64_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.2f KiB", b / 1024.0);
  else if (bytes < (int64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024.0));
  else std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::vector<int64_t> bucket_max(const std::vector<int64_t>& values, size_t buckets) {
  if (buckets == 0 || values.size() <= buckets) return values;
  std::vector<int64_t> out(buckets, 0);
  for (size_t b = 0; b < buckets; ++b) {
    const size_t lo = b * values.size() / buckets, hi = (b + 1) * values.size() / buckets;
    out[b] = *std::max_element(values.begin() + static_cast<std::ptrdiff_t>(lo), values.begin() + static_cast<std::ptrdiff_t>(hi));
  }
  return out;
}

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

std::string svg_line_chart(const std::vector<ChartSeries>& series, const ChartOptions& options) {
  const double left = 90, right = 20, top = 20, bottom = 40;
  const double plot_w = options.width - left - right, plot_h = options.height - top - bottom;
  size_t longest = 0;
  int64_t max_value = 0;
  for (const ChartSeries& s : series) {
    longest = std::max(longest, s.values.size());
    for (int64_t v : s.values) max_value = std::max(max_value, v);
  }
  const double y_max = max_value > 0 ? static_cast<double>(max_value) : 1.0;
  std::string svg = "<svg class=\"chart\" width=\"" + std::to_string(options.width) +
                    "\" height=\"" + std::to_string(options.height + 24 * static_cast<int>(series.size())) +
                    "\" role=\"img\">";
  // Axes, the extremes labelled.
  const std::string x0 = number(left), x1 = number(left + plot_w), y0 = number(top + plot_h), y1 = number(top);
  svg += "<line class=\"axis\" x1=\"" + x0 + "\" y1=\"" + y0 + "\" x2=\"" + x1 + "\" y2=\"" + y0 + "\"/>";
  svg += "<line class=\"axis\" x1=\"" + x0 + "\" y1=\"" + y0 + "\" x2=\"" + x0 + "\" y2=\"" + y1 + "\"/>";
  svg += "<text class=\"tick\" x=\"" + number(left - 6) + "\" y=\"" + y0 + "\" text-anchor=\"end\">0</text>";
  svg += "<text class=\"tick\" x=\"" + number(left - 6) + "\" y=\"" + number(top + 10) + "\" text-anchor=\"end\">" +
         escape(short_bytes(max_value)) + "</text>";
  svg += "<text class=\"tick\" x=\"" + x0 + "\" y=\"" + number(top + plot_h + 16) + "\">0</text>";
  svg += "<text class=\"tick\" x=\"" + x1 + "\" y=\"" + number(top + plot_h + 16) + "\" text-anchor=\"end\">" +
         std::to_string(longest > 0 ? longest - 1 : 0) + "</text>";
  svg += "<text class=\"tick\" x=\"" + number(left + plot_w / 2) + "\" y=\"" + number(top + plot_h + 32) +
         "\" text-anchor=\"middle\">" + escape(options.x_label) + "</text>";
  svg += "<text class=\"tick\" x=\"12\" y=\"" + number(top + plot_h / 2) + "\">" + escape(options.y_label) + "</text>";
  for (size_t k = 0; k < series.size(); ++k) {
    const ChartSeries& s = series[k];
    const std::vector<int64_t> points = bucket_max(s.values, options.max_points);
    // A reduced series keeps its span: point j stands for original index j * n / points.
    const double span = longest > 1 ? static_cast<double>(longest - 1) : 1.0;
    const double scale_x = s.values.empty() ? 0 : static_cast<double>(s.values.size()) / points.size();
    std::string coords;
    for (size_t j = 0; j < points.size(); ++j) {
      const double x = left + plot_w * (static_cast<double>(j) * scale_x) / span;
      const double y = top + plot_h - plot_h * static_cast<double>(points[j]) / y_max;
      coords += (j ? " " : "") + number(x) + "," + number(y);
    }
    const int64_t peak = s.values.empty() ? 0 : *std::max_element(s.values.begin(), s.values.end());
    const std::string cls = "series-" + std::to_string(k);
    svg += "<polyline class=\"" + cls + "\" fill=\"none\" points=\"" + coords + "\"><title>" + escape(s.label) +
           ": peak " + escape(short_bytes(peak)) + "</title></polyline>";
    const std::string ly = number(options.height + 24 * static_cast<double>(k) + 8);
    svg += "<rect class=\"" + cls + "-key\" x=\"" + x0 + "\" y=\"" + ly + "\" width=\"14\" height=\"4\"/>";
    svg += "<text class=\"legend\" x=\"" + number(left + 22) + "\" y=\"" + number(options.height + 24 * k + 14.0) + "\">" +
           escape(s.label) + " (" + std::to_string(s.values.size()) + " " + escape(options.points_name) + ", peak " + escape(short_bytes(peak)) +
           ")</text>";
  }
  return svg + "</svg>";
}

}  // namespace passcheck::report
