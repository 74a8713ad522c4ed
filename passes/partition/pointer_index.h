// A map from pointers (nodes, values) to dense positions for the partitioners: open
// addressing in one flat array, so indexing a joint graph of 10^6 nodes costs no
// per-entry allocation (std::unordered_map allocates a node per entry and frees them
// one by one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace passcheck::passes {

class PointerIndex {
 public:
  static constexpr uint32_t npos = UINT32_MAX;

  /// Empties the index and sizes it for `n` entries.
  void reserve(size_t n) {
    size_t capacity = 16;
    while (capacity < 2 * n + 2) capacity <<= 1;
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    size_ = 0;
  }

  /// Sets the position of `key` (non-null); a second insert of a key replaces it.
  void insert(const void* key, uint32_t value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    Slot* s = probe(key);
    if (!s->key) {
      s->key = key;
      ++size_;
    }
    s->value = value;
  }

  /// The position of `key`, or npos.
  uint32_t find(const void* key) const {
    if (slots_.empty()) return npos;
    for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
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

  static size_t hash(const void* p) {
    uint64_t x = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return static_cast<size_t>(x);
  }

  Slot* probe(const void* key) {
    for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == key || !s.key) return &s;
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

}  // namespace passcheck::passes
