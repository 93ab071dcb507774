// What the host's packing of a per-region GPU PDHMM call costs: the time
// of PdChunker + pd_layout_of + pd_pack_chunk (native/cuda/pdhmm_plan.cc,
// pure host code) for each region of a file, as one call per region has
// them. scripts/pd_pack_time.py writes the regions, compiles this program
// with the library's host flags and runs it:
//   pd_pack_time REGIONS.bin REPS
// REGIONS.bin: per region int64 reads, haplotypes, read bases, haplotype
// bases; int64 read offsets (reads + 1); the five read byte arrays; int64
// haplotype offsets (haplotypes + 1); haplotype bases; PD bytes.
// Prints two lines, per region in microseconds:
//   hot  mean X median Y   (each region packed REPS times in a row, the last
//                           timed: its bytes in cache, as a Java call has them)
//   cold mean X median Y   (the regions in turn, REPS passes, each timed)
// and a checksum of the packed descriptors, so no work can be skipped.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda/pdhmm_plan.h"

using namespace pyphmm::pdk;

namespace {

struct Region {
    std::vector<int64_t> read_off, hap_off;
    std::vector<uint8_t> read[5], hap, pd;
    pyphmm_pd_region g{};
};

template <typename T>
bool read_into(FILE* f, std::vector<T>& v, int64_t n) {
    v.resize(static_cast<size_t>(n));
    return n == 0 || std::fread(v.data(), sizeof(T), v.size(), f) == v.size();
}

std::vector<Region> load(const char* path) {
    std::vector<Region> out;
    FILE* f = std::fopen(path, "rb");
    if (!f) return out;
    int64_t h[4];
    while (std::fread(h, sizeof(h), 1, f) == 1) {
        Region r;
        bool ok = read_into(f, r.read_off, h[0] + 1);
        for (auto& a : r.read) ok = ok && read_into(f, a, h[2]);
        ok = ok && read_into(f, r.hap_off, h[1] + 1) && read_into(f, r.hap, h[3]) && read_into(f, r.pd, h[3]);
        if (!ok) break;
        out.push_back(std::move(r));
    }
    std::fclose(f);
    for (Region& r : out)  // (pointers after the vector stops moving)
        r.g = {static_cast<int32_t>(r.read_off.size() - 1),
               static_cast<int32_t>(r.hap_off.size() - 1),
               r.read[0].data(),
               r.read[1].data(),
               r.read[2].data(),
               r.read[3].data(),
               r.read[4].data(),
               r.read_off.data(),
               r.hap.data(),
               r.pd.data(),
               r.hap_off.data()};
    return out;
}

struct Packer {
    std::vector<char> buf;
    std::vector<uint64_t> slots;
    uint64_t checksum = 0;

    // One call's packing of region r; returns its microseconds.
    double pack(const Region& r) {
        const auto t0 = std::chrono::steady_clock::now();
        PdChunker chunker(&r.g, 1, r.read_off.back() * r.hap_off.back());
        PdChunk c;
        chunker.next(&c);
        const PdLayout L = pd_layout_of(c);
        if (buf.size() < L.in_bytes) buf.resize(L.in_bytes);
        if (slots.size() < static_cast<size_t>(c.pairs)) slots.resize(c.pairs);
        const PdPacked p = pd_pack_chunk(&r.g, c, L, buf.data(), slots.data(), 1);
        const auto t1 = std::chrono::steady_clock::now();
        checksum += static_cast<uint64_t>(p.descs) + reinterpret_cast<const PdPairDesc*>(buf.data())->roff;
        return std::chrono::duration<double, std::micro>(t1 - t0).count();
    }
};

void print(const char* what, std::vector<double> us) {
    double sum = 0;
    for (double u : us) sum += u;
    std::sort(us.begin(), us.end());
    std::printf("%s mean %.2f median %.2f\n", what, sum / us.size(), us[us.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s REGIONS.bin REPS\n", argv[0]);
        return 2;
    }
    const std::vector<Region> regions = load(argv[1]);
    const int reps = std::max(1, std::atoi(argv[2]));
    if (regions.empty()) {
        std::fprintf(stderr, "no regions in %s\n", argv[1]);
        return 1;
    }
    Packer packer;
    for (const Region& r : regions) packer.pack(r);  // (buffers grown, pages touched)
    std::vector<double> hot, cold;
    for (const Region& r : regions) {
        double us = 0;
        for (int k = 0; k < reps; ++k) us = packer.pack(r);
        hot.push_back(us);
    }
    for (int k = 0; k < reps; ++k)
        for (const Region& r : regions) cold.push_back(packer.pack(r));
    print("hot ", hot);
    print("cold", cold);
    std::printf("regions %zu checksum %llu\n", regions.size(), static_cast<unsigned long long>(packer.checksum));
    return 0;
}
