// A map from pointers (nodes, values) to dense positions, for code that indexes a whole
// graph at once (the verifier, the partitioners): open addressing in one flat array, so
// indexing a graph of 10^6 nodes costs no per-entry allocation (std::unordered_map
// allocates a node per entry and frees them one by one; Debian 12's Boost, 1.74,
// predates boost::unordered_flat_map).
//
// The slot of a pointer keeps memory neighbourhoods: nodes and values created one after
// another sit next to each other in memory, and a node's operands come from nodes shortly
// before it, so the slot is the address over 128 within a 128 MiB region, each region at
// a hashed offset. The lookups of one stretch of a graph then read a few neighbouring
// cache lines instead of one random line each (a scrambling hash made every lookup of a
// million-node graph a cache and TLB miss).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace passcheck::ir {

class PointerIndex {
 public:
  static constexpr uint32_t npos = UINT32_MAX;

  PointerIndex() = default;
  explicit PointerIndex(size_t n) { reserve(n); }

  /// Empties the index and sizes it for `n` entries.
  void reserve(size_t n) {
    size_t capacity = 16;
    while (capacity < 2 * n + 2) capacity <<= 1;
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    size_ = 0;
  }

  /// Sets the position of `key` (non-null); a second insert of a key replaces it.
  void insert(const void* key, uint32_t value) { probe_for_insert(key)->value = value; }

  /// Adds `key` at `value` unless it is there already; false (and no change) then.
  bool try_insert(const void* key, uint32_t value) {
    const size_t before = size_;
    Slot* s = probe_for_insert(key);
    if (size_ == before) return false;
    s->value = value;
    return true;
  }

  /// The position of `key`, or npos.
  uint32_t find(const void* key) const {
    if (slots_.empty() || key == nullptr) return npos;
    for (size_t i = slot_of(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return s.value;
      if (!s.key) return npos;
    }
  }

  size_t size() const { return size_; }

 private:
  struct Slot {
    const void* key = nullptr;
    uint32_t value = npos;
  };

  static size_t slot_of(const void* p) {
    const auto address = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
    const uint64_t region = (address >> 27) * 0x9e3779b97f4a7c15ULL;
    return static_cast<size_t>((address >> 7) + (region >> 32));
  }

  // The slot holding `key`, made (and counted) when it is missing.
  Slot* probe_for_insert(const void* key) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    for (size_t i = slot_of(key) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == key) return &s;
      if (!s.key) {
        s.key = key;
        ++size_;
        return &s;
      }
    }
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    reserve(old.size());  // twice the entries the old table held at most
    for (const Slot& s : old)
      if (s.key) insert(s.key, s.value);
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace passcheck::ir
