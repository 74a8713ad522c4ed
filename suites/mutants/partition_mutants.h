// Known-buggy variants of the partitioner family and of cse's metadata merge (historical
// bugs 8 and 16, and a memory budget that is not monotone), caught by the partition
// round trip (passes/partition/round_trip.h) and the budget property.
#pragma once

#include "suites/mutants/mutants.h"

#include <vector>

namespace passcheck::mutants {

/// The partitioner mutants, in all_mutants() order.
std::vector<MutantInfo> partition_mutants();

}  // namespace passcheck::mutants
