// Device meshes of any shape with named dimensions, and the process groups they define.
// A mesh of sizes (d0, d1, ..., dk) over d0*d1*...*dk ranks numbers ranks row-major: rank
// r has coordinates (r / (d1*...*dk), ...). A group is named by one or more mesh dims,
// major to minor ("dp", "tp", "dp_tp", "tp_dp"): its members are the ranks that share
// the coordinates of every other dim, ordered lexicographically by the named dims. So
// "dp" of a (dp=4, tp=2) mesh holds the ranks with the caller's tp index, "dp_tp" is the
// row-major flattened group (0..7) and "tp_dp" the column-major one (0,2,4,6,1,3,5,7).
// Standard library only: meshes are parsed from command lines and graph files.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace passcheck::dist {

/// Errors in a mesh spec, a group name or a rank (always bad input).
class MeshError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class DeviceMesh {
 public:
  /// Dims as (name, size) pairs, major to minor. Names: a lowercase letter then lowercase
  /// letters or digits (no '_': it joins dims in group names); sizes >= 1.
  explicit DeviceMesh(std::vector<std::pair<std::string, int64_t>> dims);
  /// "dp=2,tp=2" (spaces allowed). Throws MeshError naming the bad entry.
  static DeviceMesh parse(const std::string& spec);
  /// A one-dimensional mesh "name=size".
  static DeviceMesh one_dim(const std::string& name, int64_t size);

  const std::vector<std::pair<std::string, int64_t>>& dims() const { return dims_; }
  size_t ndim() const { return dims_.size(); }
  int64_t world_size() const { return world_size_; }
  /// Index of a dim by name; throws MeshError listing the mesh's dims.
  size_t dim_index(const std::string& name) const;
  bool has_dim(const std::string& name) const;
  int64_t size(const std::string& name) const { return dims_[dim_index(name)].second; }
  /// Coordinates of `rank`, one per dim; throws MeshError when rank is outside the mesh.
  std::vector<int64_t> coordinates(int64_t rank) const;
  int64_t rank_of(const std::vector<int64_t>& coordinates) const;
  /// Coordinate of `rank` along dim `name`.
  int64_t coordinate(int64_t rank, const std::string& name) const;
  /// Members (global ranks, in group order) of the group `group_name` that `rank` belongs
  /// to. Throws MeshError for an unknown dim, a repeated dim or an empty name.
  std::vector<int64_t> group_members(const std::string& group_name, int64_t rank) const;
  /// The dims a group name joins ("dp_tp" -> {"dp", "tp"}), validated against the mesh.
  std::vector<std::string> group_dims(const std::string& group_name) const;
  /// Every distinct group of `group_name` (one member list per coset), ordered by first member.
  std::vector<std::vector<int64_t>> all_groups(const std::string& group_name) const;
  /// Sub-mesh of the named dims (in the given order) containing `rank`, with the
  /// global ranks of its members in its own row-major order.
  std::pair<DeviceMesh, std::vector<int64_t>> submesh(const std::vector<std::string>& dim_names, int64_t rank) const;
  /// "dp=2,tp=2".
  std::string str() const;
  bool operator==(const DeviceMesh& o) const { return dims_ == o.dims_; }
  bool operator!=(const DeviceMesh& o) const { return !(*this == o); }

 private:
  std::vector<std::pair<std::string, int64_t>> dims_;
  int64_t world_size_ = 1;
};

/// Checks that `mesh` covers exactly `world_size` ranks; throws MeshError saying what
/// the sizes multiply to otherwise.
void check_mesh_world_size(const DeviceMesh& mesh, int64_t world_size);

/// "0, 2, 4": the ranks of a group as messages name them.
std::string rank_list(const std::vector<int64_t>& ranks);

}  // namespace passcheck::dist
