/* The static libstdc++.a of GCC 12 on Debian 12 (glibc 2.36) refers to
 * arc4random (GLIBC_2.36; std::random_device), which would make the binaries
 * need glibc >= 2.36. This hidden definition satisfies that reference inside
 * each binary (nothing in GKL's PDHMM calls it), so they run on glibc 2.35. */
#include <stdint.h>
#include <sys/random.h>

__attribute__((visibility("hidden"))) uint32_t arc4random(void) {
    uint32_t v = 0;
    while (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
        ;
    return v;
}
