// DeviceMesh: coordinates, groups and sub-meshes (see mesh.h).
#include "framework/dist/mesh.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace passcheck::dist {

namespace {

bool valid_dim_name(const std::string& name) {
  if (name.empty() || !std::islower(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c));
  });
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

constexpr int64_t kMaxWorldSize = 1 << 20;

}  // namespace

DeviceMesh::DeviceMesh(std::vector<std::pair<std::string, int64_t>> dims) : dims_(std::move(dims)) {
  if (dims_.empty()) throw MeshError("a mesh needs at least one dim (e.g. dp=4)");
  for (size_t i = 0; i < dims_.size(); ++i) {
    const auto& [name, size] = dims_[i];
    if (!valid_dim_name(name))
      throw MeshError("mesh dim name '" + name +
                      "' is not valid: use a lowercase letter followed by lowercase letters or digits");
    for (size_t j = 0; j < i; ++j)
      if (dims_[j].first == name) throw MeshError("mesh dim '" + name + "' appears twice");
    if (size < 1) throw MeshError("mesh dim '" + name + "' has size " + std::to_string(size) + "; sizes must be >= 1");
    if (size > kMaxWorldSize || world_size_ * size > kMaxWorldSize)
      throw MeshError("mesh " + str() + " has more than " + std::to_string(kMaxWorldSize) + " ranks");
    world_size_ *= size;
  }
}

DeviceMesh DeviceMesh::parse(const std::string& spec) {
  std::vector<std::pair<std::string, int64_t>> dims;
  size_t pos = 0;
  if (trim(spec).empty()) throw MeshError("empty mesh spec: expected name=size entries such as dp=2,tp=2");
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string entry = trim(spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    size_t eq = entry.find('=');
    if (eq == std::string::npos)
      throw MeshError("mesh entry '" + entry + "' (column " + std::to_string(pos + 1) +
                      " of '" + spec + "') is not name=size");
    std::string name = trim(entry.substr(0, eq)), number = trim(entry.substr(eq + 1));
    if (number.empty() || number.size() > 9 ||
        !std::all_of(number.begin(), number.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      throw MeshError("mesh entry '" + entry + "': size '" + number + "' is not a positive integer");
    dims.emplace_back(name, std::stoll(number));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return DeviceMesh(std::move(dims));
}

DeviceMesh DeviceMesh::one_dim(const std::string& name, int64_t size) { return DeviceMesh({{name, size}}); }

size_t DeviceMesh::dim_index(const std::string& name) const {
  for (size_t i = 0; i < dims_.size(); ++i)
    if (dims_[i].first == name) return i;
  throw MeshError("mesh " + str() + " has no dim named '" + name + "'");
}

bool DeviceMesh::has_dim(const std::string& name) const {
  return std::any_of(dims_.begin(), dims_.end(), [&](const auto& d) { return d.first == name; });
}

std::vector<int64_t> DeviceMesh::coordinates(int64_t rank) const {
  if (rank < 0 || rank >= world_size_)
    throw MeshError("rank " + std::to_string(rank) + " is outside mesh " + str() + " (ranks 0.." +
                    std::to_string(world_size_ - 1) + ")");
  std::vector<int64_t> coords(dims_.size());
  for (size_t i = dims_.size(); i-- > 0;) {
    coords[i] = rank % dims_[i].second;
    rank /= dims_[i].second;
  }
  return coords;
}

int64_t DeviceMesh::rank_of(const std::vector<int64_t>& coordinates) const {
  int64_t rank = 0;
  for (size_t i = 0; i < dims_.size(); ++i) rank = rank * dims_[i].second + coordinates.at(i);
  return rank;
}

int64_t DeviceMesh::coordinate(int64_t rank, const std::string& name) const {
  return coordinates(rank)[dim_index(name)];
}

std::vector<std::string> DeviceMesh::group_dims(const std::string& group_name) const {
  std::vector<std::string> names;
  size_t pos = 0;
  while (true) {
    size_t sep = group_name.find('_', pos);
    std::string name = group_name.substr(pos, sep == std::string::npos ? std::string::npos : sep - pos);
    if (name.empty()) throw MeshError("group name '" + group_name + "' has an empty dim name");
    if (!has_dim(name))
      throw MeshError("group '" + group_name + "' names dim '" + name + "', which mesh " + str() + " does not have");
    if (std::find(names.begin(), names.end(), name) != names.end())
      throw MeshError("group '" + group_name + "' names dim '" + name + "' twice");
    names.push_back(name);
    if (sep == std::string::npos) break;
    pos = sep + 1;
  }
  return names;
}

std::vector<int64_t> DeviceMesh::group_members(const std::string& group_name, int64_t rank) const {
  std::vector<std::string> names = group_dims(group_name);
  std::vector<int64_t> base = coordinates(rank);
  std::vector<size_t> idx;
  for (const auto& n : names) idx.push_back(dim_index(n));
  int64_t count = 1;
  for (size_t i : idx) count *= dims_[i].second;
  std::vector<int64_t> members;
  members.reserve(static_cast<size_t>(count));
  std::vector<int64_t> coords = base;
  for (int64_t k = 0; k < count; ++k) {
    int64_t rest = k;
    for (size_t j = idx.size(); j-- > 0;) {
      coords[idx[j]] = rest % dims_[idx[j]].second;
      rest /= dims_[idx[j]].second;
    }
    members.push_back(rank_of(coords));
  }
  return members;
}

std::vector<std::vector<int64_t>> DeviceMesh::all_groups(const std::string& group_name) const {
  std::map<int64_t, std::vector<int64_t>> by_first;
  for (int64_t r = 0; r < world_size_; ++r) {
    std::vector<int64_t> m = group_members(group_name, r);
    by_first.emplace(*std::min_element(m.begin(), m.end()), m);
  }
  std::vector<std::vector<int64_t>> groups;
  for (auto& [first, m] : by_first) groups.push_back(std::move(m));
  return groups;
}

std::pair<DeviceMesh, std::vector<int64_t>> DeviceMesh::submesh(const std::vector<std::string>& dim_names,
                                                                 int64_t rank) const {
  if (dim_names.empty()) throw MeshError("a sub-mesh needs at least one dim");
  std::string joined;
  std::vector<std::pair<std::string, int64_t>> dims;
  for (const auto& n : dim_names) {
    joined += (joined.empty() ? "" : "_") + n;
    dims.emplace_back(n, size(n));
  }
  return {DeviceMesh(std::move(dims)), group_members(joined, rank)};
}

std::string DeviceMesh::str() const {
  std::string out;
  for (const auto& [name, size] : dims_) out += (out.empty() ? "" : ",") + name + "=" + std::to_string(size);
  return out;
}

void check_mesh_world_size(const DeviceMesh& mesh, int64_t world_size) {
  if (mesh.world_size() != world_size)
    throw MeshError("mesh " + mesh.str() + " has " + std::to_string(mesh.world_size()) +
                    " ranks but the world has " + std::to_string(world_size));
}

std::string rank_list(const std::vector<int64_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

}  // namespace passcheck::dist
