// GPU choice across processes and threads (see devices.h).
#include "dispatch/devices.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace pyphmm {

int choose_preferred(const std::vector<int>& others, uint64_t ticket) {
    if (others.empty()) return -1;
    int least = -1;
    for (int o : others) least = (least < 0 || (o < 0 ? 0 : o) < least) ? (o < 0 ? 0 : o) : least;
    std::vector<int> ties;
    for (int i = 0; i < static_cast<int>(others.size()); ++i)
        if ((others[i] < 0 ? 0 : others[i]) == least) ties.push_back(i);
    return ties[ticket % ties.size()];
}

namespace {

// A directory only this user can write: created 0700, or an existing one
// owned by the user and writable by nobody else. Empty if neither.
std::string private_dir() {
    const uid_t uid = getuid();
    std::string dir;
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    if (runtime && *runtime)
        dir = std::string(runtime) + "/pyphmm";
    else
        dir = "/tmp/pyphmm-" + std::to_string(static_cast<unsigned long>(uid));
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return "";
    struct stat st;
    if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077)) return "";
    return dir;
}

}  // namespace

uint64_t host_ticket() {
    const uint64_t fallback = static_cast<uint64_t>(getpid());
    const std::string dir = private_dir();
    if (dir.empty()) return fallback;
    const std::string path = dir + "/gpu-ticket";
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return fallback;
    uint64_t ticket = fallback;
    if (flock(fd, LOCK_EX) == 0) {
        uint64_t v = 0;
        if (pread(fd, &v, sizeof(v), 0) != static_cast<ssize_t>(sizeof(v))) v = 0;
        const uint64_t next = v + 1;
        if (pwrite(fd, &next, sizeof(next), 0) == static_cast<ssize_t>(sizeof(next))) ticket = v;
        flock(fd, LOCK_UN);
    }
    close(fd);
    return ticket;
}

int least_busy(const std::atomic<int>* inflight, int count, int preferred) {
    int best = preferred, best_load = inflight[preferred].load(std::memory_order_relaxed);
    for (int k = 1; k < count && best_load > 0; ++k) {
        const int i = (preferred + k) % count;
        const int load = inflight[i].load(std::memory_order_relaxed);
        if (load < best_load) {
            best = i;
            best_load = load;
        }
    }
    return best;
}

}  // namespace pyphmm
