// CLI11 validators shared by every subcommand's numeric and text options: each refuses a
// value that cannot be meant with a message saying what is allowed ("--cases: must be at
// least 1, got 0"), before anything runs (exit 2). Header-only; CLI11 and the standard
// library only.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

namespace passcheck::cli {

// A whole number from `low` to `high`, written in decimal digits ("1e9", "0x10", "-1" and
// "1.5" are refused, never rounded, wrapped or clamped). uint64_t for --seed's full range.
inline std::optional<uint64_t> parse_whole_number(const std::string& text) {
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (text.empty() || text.size() > 20 || !std::all_of(text.begin(), text.end(), digit)) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno == ERANGE || end != text.c_str() + text.size()) return std::nullopt;
  return static_cast<uint64_t>(v);
}

inline CLI::Validator whole_number(uint64_t low, uint64_t high) {
  const std::string range = "from " + std::to_string(low) + " to " + std::to_string(high);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        std::optional<uint64_t> v = parse_whole_number(text);
        if (!v) return "expected a whole number " + range + ", got '" + text + "'";
        if (*v < low) return "must be at least " + std::to_string(low) + ", got " + text;
        if (*v > high) return "must be at most " + std::to_string(high) + ", got " + text;
        return std::string();
      },
      "[" + std::to_string(low) + " - " + std::to_string(high) + "]");
}

// A finite number of seconds (or the like) in [low, high] ((low, high] unless `low_inclusive`).
inline CLI::Validator number_in(double low, bool low_inclusive, double high) {
  auto text_of = [](double v) {
    std::string t = std::to_string(v);
    t.erase(t.find_last_not_of('0') + 1);
    if (!t.empty() && t.back() == '.') t.pop_back();
    return t;
  };
  const std::string range =
      (low_inclusive ? "at least " : "greater than ") + text_of(low) + " and at most " + text_of(high);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = text.empty() ? 0 : std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v))
          return "expected a number " + range + ", got '" + text + "'";
        if (low_inclusive ? v < low : v <= low)
          return std::string("must be ") + (low_inclusive ? "at least " : "greater than ") + text_of(low) + ", got " + text;
        if (v > high) return "must be at most " + text_of(high) + ", got " + text;
        return std::string();
      },
      std::string(low_inclusive ? "[" : "(") + text_of(low) + " - " + text_of(high) + "]");
}

// Every option of every subcommand (main.cpp applies it): an empty or blank value
// (`--python-pass ""`, `--out ''`) is a mistake in a script, never a request for the
// default.
inline const CLI::Validator kNonEmpty(
    [](std::string& text) -> std::string {
      return text.find_first_not_of(" \t\n") == std::string::npos ? "must not be empty" : "";
    },
    "");

}  // namespace passcheck::cli
