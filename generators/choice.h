// Small RapidCheck helpers shared by the generators: bounded containers, a uniform
// index that shrinks towards 0, and weighted choices that shrink towards the first
// (simplest) alternative. RapidCheck's own elementOf/weightedOneOf never shrink their
// choice, which leaves counterexamples needlessly complicated.
#pragma once

#include <rapidcheck.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace passcheck::gen {

/// The names of a (name, generator) table, in table order: the motif lists the
/// situation generators publish.
template <typename Entry>
std::vector<std::string> names_of(const std::vector<std::pair<std::string, Entry>>& table) {
  std::vector<std::string> names;
  names.reserve(table.size());
  for (const auto& entry : table) names.push_back(entry.first);
  return names;
}

/// A container of at most max_len elements at RapidCheck's default maximum size of 100.
/// Only the length is scaled: elements are generated at the caller's size so that, say,
/// strings inside a short list are not artificially short.
template <typename Container, typename... Elems>
rc::Gen<Container> up_to(int max_len, rc::Gen<Elems>... elems) {
  return rc::gen::withSize([=](int size) {
    return rc::gen::resize(size * max_len / 100, rc::gen::container<Container>(rc::gen::resize(size, elems)...));
  });
}

/// A uniform index in [0, n) that shrinks towards 0. Unlike inRange it reaches the top
/// of its range at every size, so later alternatives are not hidden from small runs.
inline rc::Gen<std::size_t> shrinking_index(std::size_t n) {
  return rc::Gen<std::size_t>([n](const rc::Random& random, int /*size*/) {
    return rc::shrinkable::shrinkRecur(static_cast<std::size_t>(rc::Random(random).next() % n),
                                       [](std::size_t i) { return rc::shrink::towards<std::size_t>(i, 0); });
  });
}

/// Weighted choice that shrinks towards the first alternative, so list the simplest first.
template <typename T>
rc::Gen<T> choose(std::vector<std::pair<std::size_t, rc::Gen<T>>> choices) {
  std::vector<rc::Gen<T>> slots;
  for (const auto& [weight, gen] : choices) slots.insert(slots.end(), weight, gen);
  return rc::gen::mapcat(shrinking_index(slots.size()), [slots](std::size_t i) { return slots[i]; });
}

/// Weighted choice among constants, shrinking towards the first.
template <typename T>
rc::Gen<T> choose_value(std::vector<std::pair<std::size_t, T>> choices) {
  std::vector<std::pair<std::size_t, rc::Gen<T>>> gens;
  for (const auto& [weight, value] : choices) gens.push_back({weight, rc::gen::just(value)});
  return choose(std::move(gens));
}

/// Uniform choice among constants, shrinking towards the first.
template <typename T>
rc::Gen<T> choose_value(std::vector<T> values) {
  std::vector<std::pair<std::size_t, T>> weighted;
  for (T& v : values) weighted.push_back({1, std::move(v)});
  return choose_value(std::move(weighted));
}

}  // namespace passcheck::gen
