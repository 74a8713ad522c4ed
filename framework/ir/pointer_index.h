// A map from pointers (nodes, values) to dense positions, for code that indexes a whole
// graph at once (the verifier, the partitioners): open addressing in one flat array, so
// indexing a graph of 10^6 nodes costs no per-entry allocation (std::unordered_map
// allocates a node per entry and frees them one by one; Debian 12's Boost, 1.74,
// predates boost::unordered_flat_map).
//
// The slot is a scrambling hash of the address. A slot that kept memory neighbours next to
// each other (the address over 128, plus a hashed offset per 128 MiB region) made lookups
// of consecutive nodes hit neighbouring cache lines, but two regions whose windows of
// slots overlapped formed clusters that linear probing walks end to end: classify-nodes on
// 10^6 nodes took 20.8 s instead of 0.5 s in one run. A hash spreads every key.
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
    uint64_t x = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return static_cast<size_t>(x);
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
