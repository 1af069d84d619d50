// A statically linked program: nothing can be loaded into it, which
// ferret-run says at start.
int main() { return 3; }
