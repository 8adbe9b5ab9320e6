#include "core/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace sapp::parallel {

int threads_or_cores(int threads) { return threads > 0 ? threads : static_cast<int>(std::max(1U, std::thread::hardware_concurrency())); }

void run(int threads, const std::function<void(int)>& worker, const std::function<void()>& tick, std::chrono::milliseconds interval,
         const std::function<void()>& on_failure) {
  threads = std::max(1, threads);
  std::mutex failure_mutex;
  std::exception_ptr failure;
  std::atomic<int> running{threads};
  auto guarded = [&](int w) {
    try {
      worker(w);
    } catch (...) {
      bool first = false;
      {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) {
          failure = std::current_exception();
          first = true;
        }
      }
      if (first && on_failure) on_failure();
    }
    --running;
  };
  if (threads == 1 && !tick) {
    guarded(0);
  } else {
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(threads));
    for (int w = 0; w < threads; ++w) pool.emplace_back(guarded, w);
    while (tick && running.load() > 0) {
      std::this_thread::sleep_for(interval);
      if (running.load() > 0) tick();
    }
    for (auto& t : pool) t.join();
  }
  if (failure) std::rethrow_exception(failure);
}

void for_each_index(int threads, std::size_t n, const std::function<void(std::size_t)>& task, const std::function<void()>& tick,
                    std::chrono::milliseconds interval) {
  std::atomic<std::size_t> next{0};
  int workers = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(std::max(1, threads)), std::max<std::size_t>(1, n)));
  run(
      workers,
      [&](int) {
        for (std::size_t i = next++; i < n; i = next++) task(i);
      },
      tick, interval, [&] { next.store(n); });
}

}  // namespace sapp::parallel
