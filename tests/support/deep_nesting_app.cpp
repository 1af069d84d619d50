// deep_nesting_app: 20,000 regions of distinct names nested in one another, and
// inside the innermost 100,000 nested regions of one name (begin/end without a
// scope: no recursion, no deep stack). For the TAU backend's memory bound.
#include <string>
#include <vector>

#include "ferret/ferret.hpp"

int main() {
  constexpr int distinct = 20'000;
  constexpr int same = 100'000;
  std::vector<ferret::name> names;
  for (int i = 0; i < distinct; ++i) names.push_back(ferret::register_name("level " + std::to_string(i)));
  const ferret::name repeated = ferret::register_name("recursion");
  for (const ferret::name& n : names) ferret::begin(n);
  for (int i = 0; i < same; ++i) ferret::begin(repeated);
  for (int i = 0; i < same; ++i) ferret::end(repeated);
  for (auto n = names.rbegin(); n != names.rend(); ++n) ferret::end(*n);
  return 0;
}
