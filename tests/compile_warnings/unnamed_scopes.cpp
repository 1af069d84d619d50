// A region or data object with no variable ends (is unregistered) where it
// begins: the compiler is to warn about each line below, enabled or compiled
// out (unnamed_scopes_warned).
#include <ferret/ferret.hpp>

int main() {
  static int array[4];
  ferret::region("solve");                                      // line 8
  ferret::region{"solve"};                                      // line 9
  ferret::data_object("array", array, sizeof array);            // line 10
  ferret::region named{"named: no warning"};
  ferret::data_object kept{"kept: no warning", array, sizeof array};
  return 0;
}
