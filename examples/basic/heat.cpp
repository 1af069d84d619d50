// heat: 2-D heat diffusion (Jacobi sweeps) on several threads, annotated with
// ferret. Run it traced:
//   FERRET_BACKEND=chrome FERRET_OUTPUT=heat.json ./heat
// and open heat.json in https://ui.perfetto.dev.
#include <ferret/ferret.hpp>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct grid {
  int rows, columns;
  std::vector<double> cells;
  double& at(int r, int c) { return cells[static_cast<std::size_t>(r * columns + c)]; }
  double at(int r, int c) const { return cells[static_cast<std::size_t>(r * columns + c)]; }
};

// One Jacobi sweep over rows [first, last); returns the largest change.
// A reusable barrier whose last arriving thread runs `on_completion` (C++17
// has no std::barrier).
class step_barrier {
 public:
  step_barrier(int count, std::function<void()> on_completion)
      : count_(count), waiting_(count), on_completion_(std::move(on_completion)) {}
  void arrive_and_wait() {
    std::unique_lock lock{mutex_};
    const unsigned generation = generation_;
    if (--waiting_ == 0) {
      on_completion_();
      waiting_ = count_;
      ++generation_;
      released_.notify_all();
      return;
    }
    released_.wait(lock, [&] { return generation != generation_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  const int count_;
  int waiting_;
  unsigned generation_ = 0;
  std::function<void()> on_completion_;
};

double sweep(const grid& from, grid& to, int first, int last) {
  FERRET_FUNCTION();
  double change = 0.0;
  for (int r = std::max(first, 1); r < std::min(last, from.rows - 1); ++r)
    for (int c = 1; c < from.columns - 1; ++c) {
      const double value =
          0.25 * (from.at(r - 1, c) + from.at(r + 1, c) + from.at(r, c - 1) + from.at(r, c + 1));
      change = std::max(change, std::fabs(value - from.at(r, c)));
      to.at(r, c) = value;
    }
  return change;
}

}  // namespace

int main(int argc, char** argv) {
  const int size = argc > 1 ? std::atoi(argv[1]) : 512;
  const int workers = argc > 2 ? std::atoi(argv[2]) : 4;
  const int max_steps = 200;
  ferret::set_metadata("grid-size", size);
  ferret::set_metadata("workers", workers);
  ferret::set_thread_name("main");

  grid a{size, size, {}}, b{size, size, {}};
  {
    FERRET_REGION("setup");
    a.cells.assign(static_cast<std::size_t>(size) * static_cast<std::size_t>(size), 0.0);
    for (int c = 0; c < size; ++c) a.at(0, c) = 100.0;  // a hot edge
    b = a;
  }
  // Named memory ranges: later backends attribute transfers to these arrays.
  ferret::data_object grid_a{"grid A", a.cells.data(), a.cells.size() * sizeof(double)};
  ferret::data_object grid_b{"grid B", b.cells.data(), b.cells.size() * sizeof(double)};

  ferret::counter residual{"max change"};
  std::vector<double> changes(static_cast<std::size_t>(workers));
  bool done = false;
  int steps = 0;
  step_barrier sync{workers, [&] {
                      // Runs once per step, on one thread, between sweeps.
                      const double change = *std::max_element(changes.begin(), changes.end());
                      residual.record(change);
                      ++steps;
                      std::swap(a, b);
                      if (change < 1e-3 || steps == max_steps) {
                        done = true;
                        ferret::mark("stop");
                      }
                    }};

  FERRET_REGION("solve");
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      ferret::set_thread_name("worker " + std::to_string(w));
      const int rows = (size + workers - 1) / workers;
      while (!done) {
        FERRET_REGION("step");
        changes[static_cast<std::size_t>(w)] = sweep(a, b, w * rows, (w + 1) * rows);
        ferret::region wait{"barrier"};
        sync.arrive_and_wait();
      }
    });
  }
  for (auto& t : threads) t.join();
  std::printf("%d steps on a %dx%d grid with %d threads\n", steps, size, size, workers);
  return 0;
}
