// The value-name table of a Graph: name -> Value*, every name unique.
//
// Graph files and traced graphs name almost every value <prefix><number> ("v962",
// "in451", "mm_12", "primals_3", "getitem_5"), numbered in the order they are defined,
// and a node reads values defined shortly before it or inputs in their declaration
// order. A hash table scatters consecutive names over the whole table, so at a million
// values every lookup is a cache and TLB miss (half the parser's time). Here a name
// ending in a number is kept in a dense array per prefix, indexed by the number, so
// consecutive names are neighbours in memory; any other name (or a number far beyond
// what its prefix holds) goes to a hash table. A name lives in exactly one of the two.
#pragma once

#include <c10/util/flat_hash_map.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace passcheck::ir {

class Value;

class NameIndex {
 public:
  /// `name_of(v)` must return the name `v` was inserted under, for as long as it is in
  /// the index: keys view the values' own names instead of copying them.
  using NameOf = const std::string& (*)(const Value*);
  explicit NameIndex(NameOf name_of) : name_of_(name_of) {}
  NameIndex(const NameIndex&) = delete;
  NameIndex& operator=(const NameIndex&) = delete;

  /// The value named `name`, or null.
  Value* find(std::string_view name) const;
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  /// Adds `v` under its name; false (and no change) when the name is taken.
  bool insert(Value* v);
  /// Removes `v`'s name when it maps to `v`.
  void erase(const Value* v);
  size_t size() const { return size_; }
  /// Slots of the per-prefix arrays, used or not: what the dense part costs in memory, a
  /// few times the names it holds at most.
  size_t array_slots() const;

 private:
  // Keys view a name owned elsewhere (a value's name, a run's prefix); the hash is kept
  // in the key so that only a probe whose hash matches compares the names.
  struct Key {
    std::string_view name;
    size_t hash;
    explicit Key(std::string_view n) : name(n), hash(std::hash<std::string_view>{}(n)) {}
    bool operator==(const Key& other) const { return hash == other.hash && name == other.name; }
  };
  struct KeyHash {
    size_t operator()(const Key& key) const { return key.hash; }
  };
  // The names <prefix><number> with one prefix: slots[k] holds number base + k.
  struct Run {
    std::string prefix;
    uint32_t base = 0;
    std::vector<Value*> slots;
    size_t live = 0;
    Value* at(uint32_t n) const;
  };
  struct Split {
    std::string_view prefix;
    uint32_t number = 0;
    bool numbered = false;
  };
  static Split split(std::string_view name);
  Run* run_of(std::string_view prefix) const;
  // Whether number `n` belongs in `run`'s array: not below its base, and within a few
  // times the names the prefix holds, so a stray large number cannot make a huge array.
  static bool fits_dense(const Run& run, uint32_t n);

  NameOf name_of_;
  std::vector<std::unique_ptr<Run>> runs_;
  ska::flat_hash_map<Key, Run*, KeyHash> runs_by_prefix_;
  ska::flat_hash_map<Key, Value*, KeyHash> hashed_;
  // Names of the numbered shape that were too far out for their run's array and live in
  // `hashed_`: while none exist, a numbered name missing from its array is not there.
  size_t numbered_in_hashed_ = 0;
  size_t size_ = 0;
};

}  // namespace passcheck::ir
