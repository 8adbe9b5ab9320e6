// core/parallel: the one worker pool of the library, used by the search (blocks of candidates) and by plan (one
// layout's balancing per task). Results never depend on the thread count: callers give each worker its own
// state and merge in a fixed order.
#pragma once

#include <chrono>
#include <functional>

namespace sapp::parallel {

// `threads` when positive, else every core the machine has (at least 1).
int threads_or_cores(int threads);

// Calls worker(w) for every w in [0, threads), each on its own thread (on the calling thread when threads is 1
// and there is no tick), and tick() on the calling thread every `interval` until all have returned. The first
// exception a worker throws is rethrown here once every worker has returned; `on_failure` runs as soon as it is
// caught, so the caller can make the other workers stop early.
void run(int threads, const std::function<void(int)>& worker, const std::function<void()>& tick = {},
         std::chrono::milliseconds interval = std::chrono::milliseconds(100), const std::function<void()>& on_failure = {});

// Hands out the indices [0, n) to `threads` workers, each index once, in increasing order per worker.
void for_each_index(int threads, std::size_t n, const std::function<void(std::size_t)>& task, const std::function<void()>& tick = {},
                    std::chrono::milliseconds interval = std::chrono::milliseconds(100));

}  // namespace sapp::parallel
