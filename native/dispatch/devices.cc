// GPU choice across processes and threads (see devices.h).
#include "dispatch/devices.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace pyphmm {

int choose_preferred(const std::vector<int>& loads, uint64_t ticket) {
    if (loads.empty()) return -1;
    int least = -1;
    for (int o : loads) least = (least < 0 || (o < 0 ? 0 : o) < least) ? (o < 0 ? 0 : o) : least;
    std::vector<int> ties;
    for (int i = 0; i < static_cast<int>(loads.size()); ++i)
        if ((loads[i] < 0 ? 0 : loads[i]) == least) ties.push_back(i);
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

// The registry (see claim_device): "ticket N", then one "pid start id" line
// per process that chose a GPU.
struct Claim {
    long pid;
    unsigned long long start;  // the process's start time, so a reused pid is not taken for it
    std::string id;
};
struct Registry {
    uint64_t ticket = 0;
    std::vector<Claim> claims;
};

// Start time of a process (clock ticks since boot, /proc/PID/stat field 22);
// 0 if it is not running.
unsigned long long process_start(long pid) {
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE* f = std::fopen(path, "r");
    if (!f) return 0;
    char buf[1024];
    const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    const char* p = std::strrchr(buf, ')');  // the command name may hold spaces and parentheses
    if (!p) return 0;
    unsigned long long start = 0;
    // fields 3..21 skipped, 22 read
    if (std::sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                    &start) != 1)
        return 0;
    return start;
}

Registry read_registry(int fd) {
    std::string text;
    char buf[4096];
    for (off_t at = 0;;) {
        const ssize_t n = pread(fd, buf, sizeof(buf), at);
        if (n <= 0) break;
        text.append(buf, static_cast<size_t>(n));
        at += n;
    }
    Registry r;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t eol = text.find('\n', pos);
        if (eol == std::string::npos) eol = text.size();
        const std::string line = text.substr(pos, eol - pos);
        pos = eol + 1;
        unsigned long long ticket = 0;
        long pid = 0;
        unsigned long long start = 0;
        char id[64];
        if (std::sscanf(line.c_str(), "ticket %llu", &ticket) == 1)
            r.ticket = ticket;
        else if (std::sscanf(line.c_str(), "%ld %llu %63s", &pid, &start, id) == 3 && pid > 0)
            r.claims.push_back({pid, start, id});
    }
    return r;
}

void write_registry(int fd, const Registry& r) {
    std::string text = "ticket " + std::to_string(r.ticket) + "\n";
    for (const Claim& c : r.claims) text += std::to_string(c.pid) + " " + std::to_string(c.start) + " " + c.id + "\n";
    // A failed write loses only what the registry tells the next process:
    // it then sees fewer processes than there are, as NVML alone would.
    if (ftruncate(fd, 0) != 0) return;
    const ssize_t written = pwrite(fd, text.data(), text.size(), 0);
    (void)written;
}

// Index of the device named id among ids, or -1.
int index_of(const std::vector<std::string>& ids, const std::string& id) {
    for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] == id) return static_cast<int>(i);
    return -1;
}

}  // namespace

int claim_device(const std::vector<std::string>& ids, const std::vector<int>& others, int pinned) {
    const long self = static_cast<long>(getpid());
    const std::string dir = private_dir();
    const int fd =
        dir.empty() ? -1 : open((dir + "/gpu-claims").c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
        if (fd >= 0) close(fd);
        return pinned >= 0 ? pinned : choose_preferred(others, static_cast<uint64_t>(self));
    }
    Registry r = read_registry(fd);
    std::vector<Claim> live;
    std::vector<int> loads(others.size(), 0);
    for (const Claim& c : r.claims) {
        if (c.pid == self || c.start == 0 || process_start(c.pid) != c.start) continue;  // gone (or this process)
        live.push_back(c);
        const int i = index_of(ids, c.id);
        if (i >= 0) ++loads[i];
    }
    for (size_t i = 0; i < loads.size(); ++i) loads[i] = std::max(loads[i], others[i]);
    const int chosen = pinned >= 0 ? pinned : choose_preferred(loads, r.ticket);
    r.ticket += 1;
    live.push_back({self, process_start(self), ids[chosen]});
    r.claims = live;
    write_registry(fd, r);
    flock(fd, LOCK_UN);
    close(fd);
    return chosen;
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
