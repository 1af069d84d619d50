#include <ferret/ferret.hpp>

int main() {
  FERRET_FUNCTION();
  ferret::mark("consumer ran");
  return 0;
}
