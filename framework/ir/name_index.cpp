#include "framework/ir/name_index.h"

namespace passcheck::ir {

NameIndex::Split NameIndex::split(std::string_view name) {
  size_t digits_at = name.size();
  while (digits_at > 0 && name[digits_at - 1] >= '0' && name[digits_at - 1] <= '9') --digits_at;
  const std::string_view digits = name.substr(digits_at);
  Split s;
  s.prefix = name.substr(0, digits_at);
  // Only the canonical spelling of a number ("7", never "07") names a slot, so that one
  // slot stands for exactly one name; nine digits keep it within uint32_t.
  if (digits.empty() || digits.size() > 9 || (digits.size() > 1 && digits[0] == '0')) return s;
  uint32_t n = 0;
  for (char c : digits) n = n * 10 + static_cast<uint32_t>(c - '0');
  s.number = n;
  s.numbered = true;
  return s;
}

NameIndex::Run* NameIndex::run_of(std::string_view prefix) const {
  auto it = runs_by_prefix_.find(Key(prefix));
  return it == runs_by_prefix_.end() ? nullptr : it->second;
}

bool NameIndex::fits_dense(const Run& run, uint32_t n) {
  if (n < run.base) return false;
  const size_t at = n - run.base;
  return at < run.slots.size() || at < 2 * run.live + 16;
}

Value* NameIndex::Run::at(uint32_t n) const {
  return n >= base && n - base < slots.size() ? slots[n - base] : nullptr;
}

Value* NameIndex::find(std::string_view name) const {
  const Split s = split(name);
  if (s.numbered) {
    if (const Run* run = run_of(s.prefix))
      if (Value* v = run->at(s.number)) return v;
    if (numbered_in_hashed_ == 0) return nullptr;
  }
  auto it = hashed_.find(Key(name));
  return it == hashed_.end() ? nullptr : it->second;
}

bool NameIndex::insert(Value* v) {
  const std::string& name = name_of_(v);
  const Split s = split(name);
  if (s.numbered) {
    Run* run = run_of(s.prefix);
    if (!run) {
      // The first number seen with a prefix starts its array: a graph printed after
      // passes erased the low numbers still numbers on from there.
      runs_.push_back(std::make_unique<Run>());
      run = runs_.back().get();
      run->prefix = std::string(s.prefix);
      run->base = s.number;
      runs_by_prefix_.emplace(Key(run->prefix), run);
    }
    if (fits_dense(*run, s.number)) {
      if (run->at(s.number)) return false;
      if (numbered_in_hashed_ > 0 && hashed_.find(Key(name)) != hashed_.end()) return false;
      const size_t at = s.number - run->base;
      if (at >= run->slots.size()) run->slots.resize(at + 1, nullptr);
      run->slots[at] = v;
      ++run->live;
      ++size_;
      return true;
    }
  }
  if (!hashed_.emplace(Key(name), v).second) return false;
  if (s.numbered) ++numbered_in_hashed_;
  ++size_;
  return true;
}

void NameIndex::erase(const Value* v) {
  const std::string& name = name_of_(v);
  const Split s = split(name);
  if (s.numbered) {
    if (Run* run = run_of(s.prefix); run && run->at(s.number) == v) {
      run->slots[s.number - run->base] = nullptr;
      --run->live;
      --size_;
      return;
    }
  }
  auto it = hashed_.find(Key(name));
  if (it == hashed_.end() || it->second != v) return;
  hashed_.erase(it);
  if (s.numbered) --numbered_in_hashed_;
  --size_;
}

size_t NameIndex::array_slots() const {
  size_t slots = 0;
  for (const auto& run : runs_) slots += run->slots.size();
  return slots;
}

}  // namespace passcheck::ir
