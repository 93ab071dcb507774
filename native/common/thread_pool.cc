#include "thread_pool.h"

#include "common/config.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

namespace pyphmm {

int available_cores() {
    if (const int64_t n = config::get(config::Knob::kTestCores); n > 0) return static_cast<int>(n);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    unsigned n = std::thread::hardware_concurrency();
    return n > 0 ? static_cast<int>(n) : 1;
}

namespace {

struct Job {
    const std::function<void(int64_t)>* fn;
    int64_t n;
    std::atomic<int64_t> next{0};
    int tickets = 0;  // workers that may still join (guarded by the pool mutex)
    int active = 0;   // workers inside work() (guarded by the pool mutex)
    std::condition_variable finished;
    std::mutex error_mu;
    std::exception_ptr error;  // the first item that threw; rethrown to the caller

    // Runs items until none is left. An exception (std::bad_alloc under a
    // small address space) never leaves a worker's thread, which would end
    // the process in std::terminate: the first is kept, the items not yet
    // taken are dropped, and parallel_for rethrows it on the caller's thread.
    void work(bool worker) {
        const bool fail = worker && config::on(config::Knob::kTestPoolThrow);
        try {
            for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
                if (fail) throw std::bad_alloc();
                (*fn)(i);
            }
        } catch (...) {
            next.store(n, std::memory_order_relaxed);
            std::lock_guard<std::mutex> lock(error_mu);
            if (!error) error = std::current_exception();
        }
    }
};

class Pool {
  public:
    // Starts up to `workers` threads. A thread that cannot start (no memory
    // for its stack under a small address-space limit, a thread limit) leaves
    // the pool smaller: the callers still compute, with fewer helpers, and
    // the threads already started are never left joinable in a destroyed
    // vector (which would end the process in std::terminate).
    explicit Pool(int workers) {
        threads_.reserve(static_cast<size_t>(workers));
        for (int i = 0; i < workers; ++i) {
            try {
                threads_.emplace_back([this] { loop(); });
            } catch (const std::system_error&) {
                break;
            }
        }
    }
    // Never destroyed: workers may be blocked at exit, and after fork() the
    // child's copy has no threads at all (see reset_after_fork).
    int workers() const { return static_cast<int>(threads_.size()); }

    void run(Job& job, int helpers) {
        bool queued;  // (workers change job.tickets once the lock is released)
        {
            std::lock_guard<std::mutex> lock(mu_);
            job.tickets = std::min(helpers, workers());
            queued = job.tickets > 0;
            if (queued) queue_.push_back(&job);
        }
        if (queued) wake_.notify_all();
        job.work(false);
        std::unique_lock<std::mutex> lock(mu_);
        // Withdraw the tickets no worker took, then wait for those who did.
        if (job.tickets > 0) {
            job.tickets = 0;
            queue_.erase(std::remove(queue_.begin(), queue_.end(), &job), queue_.end());
        }
        job.finished.wait(lock, [&] { return job.active == 0; });
    }

  private:
    void loop() {
        std::unique_lock<std::mutex> lock(mu_);
        for (;;) {
            wake_.wait(lock, [&] { return !queue_.empty(); });
            Job* job = queue_.front();
            if (--job->tickets == 0) queue_.pop_front();
            ++job->active;
            lock.unlock();
            job->work(true);
            lock.lock();
            if (--job->active == 0) job->finished.notify_all();
        }
    }

    std::mutex mu_;
    std::condition_variable wake_;
    std::deque<Job*> queue_;
    std::vector<std::thread> threads_;
};

// Address space a worker may take: its stack (8 MiB) and the malloc arena
// glibc reserves for a new thread (64 MiB), with room to spare.
constexpr uint64_t kWorkerAddressSpace = 80ull << 20;

// Workers that fit below an address-space limit (`ulimit -v`): a thread
// that starts but then cannot get memory for its thread-local storage ends
// the process inside glibc, so under a limit the pool starts only as many
// as the room left allows (0: the callers compute alone).
int workers_that_fit(int wanted) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return wanted;
    uint64_t pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%" SCNu64, &pages) != 1) pages = 0;
        std::fclose(f);
    }
    const uint64_t used = pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t room = rl.rlim_cur > used ? rl.rlim_cur - used : 0;
    return static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(wanted), room / kWorkerAddressSpace));
}

std::mutex g_pool_mu;
Pool* g_pool = nullptr;

void reset_after_fork() { g_pool = nullptr; }  // the old pool's threads do not exist in the child

Pool& pool() {
    std::lock_guard<std::mutex> lock(g_pool_mu);
    if (!g_pool) {
        static std::once_flag registered;
        std::call_once(registered, [] { pthread_atfork(nullptr, nullptr, reset_after_fork); });
        g_pool = new Pool(workers_that_fit(std::max(0, available_cores() - 1)));
    }
    return *g_pool;
}

}  // namespace

void parallel_for(int64_t n, int threads, const std::function<void(int64_t)>& fn) {
    if (n <= 0) return;
    if (threads <= 0) threads = available_cores();
    int64_t helpers = std::min<int64_t>(threads, n) - 1;
    Job job;
    job.fn = &fn;
    job.n = n;
    if (helpers <= 0) {
        job.work(false);
        return;
    }
    pool().run(job, static_cast<int>(helpers));
    if (job.error) std::rethrow_exception(job.error);
}

}  // namespace pyphmm
