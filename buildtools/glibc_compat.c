/* Definitions libpyphmm.so needs when it is linked against glibc 2.28's
 * symbol set (PYPHMM_GLIBC_TARGET, buildtools/glibc.py): symbols that the
 * build machine's newer glibc headers or GCC's static libstdc++ reference but
 * that glibc 2.28 does not export. Hidden, so they satisfy references inside
 * the library only and never interpose on the process's own glibc. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h> /* getrandom: glibc 2.25 */
#include <unistd.h>

#define HIDDEN __attribute__((visibility("hidden")))

/* glibc 2.32. libstdc++ (its headers and its archive) reads it to skip atomic
 * reference counting in single-threaded processes. 0 means "may be
 * multi-threaded", which is always correct; it only forgoes that shortcut. */
HIDDEN char __libc_single_threaded = 0;

/* glibc 2.36. std::random_device's "arc4random" source in libstdc++.a, which
 * its string instantiations pull in; pyphmm itself draws no random numbers. */
HIDDEN uint32_t arc4random(void) {
    uint32_t v;
    for (;;) {
        ssize_t n = getrandom(&v, sizeof v, 0);
        if (n == (ssize_t)sizeof v) return v;
        if (n < 0 && errno == EINTR) continue;
        break;
    }
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, &v, sizeof v);
        close(fd);
        if (n == (ssize_t)sizeof v) return v;
    }
    abort(); /* no entropy source at all: as glibc's own arc4random does */
}
