// Host-side planning of a GPU Smith-Waterman batch (see sw_plan.h).
#include "cuda/sw_plan.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include "common/thread_pool.h"

namespace pyphmm {
namespace sw_gpu {

namespace {

// Last occurrence of alt in ref, or -1 (GATK's Utils.lastIndexOf). Most
// pairs have none, so every position is tried: 8 bytes at a time when alt
// has that many.
int last_index_of(const uint8_t* ref, int m, const uint8_t* alt, int n) {
    if (n >= 8) {
        uint64_t head;
        std::memcpy(&head, alt, 8);
        for (int pos = m - n; pos >= 0; --pos) {
            uint64_t w;
            std::memcpy(&w, ref + pos, 8);
            if (w == head && std::memcmp(ref + pos + 8, alt + 8, n - 8) == 0) return pos;
        }
        return -1;
    }
    for (int pos = m - n; pos >= 0; --pos)
        if (ref[pos] == alt[0] && std::memcmp(ref + pos, alt, n) == 0) return pos;
    return -1;
}

}  // namespace

bool exact_match(const uint8_t* ref, int m, const uint8_t* alt, int n, char* cigar, int32_t* offset) {
    if (n > m) return false;
    const int pos = last_index_of(ref, m, alt, n);
    if (pos < 0) return false;
    *offset = pos;
    std::snprintf(cigar, 16, "%dM", n);
    return true;
}

std::vector<int64_t> take_exact_matches(const pyphmm_sw_batch& batch, char* cigars, const int64_t* cigar_offsets,
                                        int32_t* offsets) {
    const int64_t n = batch.num_pairs;
    std::vector<uint8_t> done(n, 0);
    parallel_for(n, 0, [&](int64_t i) {
        const int s = batch.strategies[batch.per_pair ? i : 0];
        if (s != PYPHMM_SW_SOFTCLIP && s != PYPHMM_SW_IGNORE) return;
        const int m = static_cast<int>(batch.ref_offsets[i + 1] - batch.ref_offsets[i]);
        const int len = static_cast<int>(batch.alt_offsets[i + 1] - batch.alt_offsets[i]);
        done[i] = exact_match(batch.ref + batch.ref_offsets[i], m, batch.alt + batch.alt_offsets[i], len,
                              cigars + cigar_offsets[i], &offsets[i]);
    });
    std::vector<int64_t> todo;
    for (int64_t i = 0; i < n; ++i)
        if (!done[i]) todo.push_back(i);
    return todo;
}

int64_t pair_fixed_bytes(int m, int n) {
    return sizeof(PairDesc) + 2 * (int64_t(m) + n) + 1 + kShortCigar + 2 * sizeof(int32_t);
}

void Work::grow_to(const Work& o) {
    bt_cells = std::max(bt_cells, o.bt_cells);
    edge_ints = std::max(edge_ints, o.edge_ints);
    scratch_ints = std::max(scratch_ints, o.scratch_ints);
}

Work pair_work(int m, int n, int P, int K) {
    Work w;
    w.bt_cells = backtrack_cells(m, n, P, K);
    w.edge_ints = m + n + 2;
    w.scratch_ints = n > P * K ? 6 * int64_t(m) : 0;
    return w;
}

Todo make_todo(const pyphmm_sw_batch& batch, std::vector<int64_t> pairs, int lanes) {
    Todo t;
    t.batch = &batch;
    t.lanes = lanes;
    t.cols.assign(batch.num_pairs, 0);
    for (int64_t i : pairs) t.cols[i] = static_cast<int8_t>(choose_cols(t.n(i), lanes));
    t.pairs = std::move(pairs);
    return t;
}

PairNeeds largest_pair(const Todo& todo) {
    PairNeeds need;
    for (int64_t i : todo.pairs) {
        need.work.grow_to(pair_work(todo.m(i), todo.n(i), todo.lanes, todo.cols[i]));
        need.fixed = std::max(need.fixed, pair_fixed_bytes(todo.m(i), todo.n(i)) + todo.m(i) + todo.n(i));
    }
    return need;
}

std::vector<Chunk> plan_chunks(const Todo& todo, int64_t fixed_budget, int64_t work_budget) {
    constexpr size_t kMaxChunkPairs = 1 << 20;
    const std::vector<int64_t>& pairs = todo.pairs;
    std::vector<Chunk> chunks;
    for (size_t k = 0; k < pairs.size();) {
        Chunk c;
        c.begin = k;
        int64_t fixed = 0;
        for (; k < pairs.size() && k - c.begin < kMaxChunkPairs; ++k) {
            const int64_t i = pairs[k];
            const int64_t f = fixed + pair_fixed_bytes(todo.m(i), todo.n(i));
            if (k > c.begin && f + todo.seq_bytes(pairs[c.begin], i) > fixed_budget) break;
            fixed = f;
        }
        c.end = k;
        // By K: a counting sort keeps batch order within each K.
        int64_t per_k[kMaxColsPerLane + 2] = {0};
        for (size_t t = c.begin; t < c.end; ++t) ++per_k[todo.cols[pairs[t]] + 1];
        for (int K = 1; K <= kMaxColsPerLane + 1; ++K) per_k[K] += per_k[K - 1];
        c.order.resize(c.end - c.begin);
        for (size_t t = c.begin; t < c.end; ++t) c.order[per_k[todo.cols[pairs[t]]]++] = pairs[t];
        Work w;
        for (size_t t = 0; t < c.order.size(); ++t) {
            const int64_t i = c.order[t];
            const Work add = pair_work(todo.m(i), todo.n(i), todo.lanes, todo.cols[i]);
            Work next = w;
            next += add;
            if (t == 0 || next.bytes() > work_budget) {
                c.sub_begin.push_back(static_cast<int>(t));
                next = add;
            }
            w = next;
        }
        c.sub_begin.push_back(static_cast<int>(c.order.size()));
        chunks.push_back(std::move(c));
    }
    return chunks;
}

BufferSizes buffer_sizes(const Todo& todo, const std::vector<Chunk>& chunks) {
    BufferSizes b;
    for (const Chunk& c : chunks) {
        b.pairs = std::max<int64_t>(b.pairs, c.order.size());
        b.seq = std::max(b.seq, todo.seq_bytes(todo.pairs[c.begin], todo.pairs[c.end - 1]));
        int64_t cig = 0;
        for (int64_t i : c.order) cig += 2 * (int64_t(todo.m(i)) + todo.n(i)) + 1;
        b.cigar = std::max(b.cigar, cig);
        for (size_t s = 0; s + 1 < c.sub_begin.size(); ++s) {
            Work w;
            for (int t = c.sub_begin[s]; t < c.sub_begin[s + 1]; ++t) {
                const int64_t i = c.order[t];
                w += pair_work(todo.m(i), todo.n(i), todo.lanes, todo.cols[i]);
            }
            b.work.grow_to(w);
        }
    }
    return b;
}

int64_t describe_chunk(const Todo& todo, const Chunk& c, std::vector<PairDesc>* descs) {
    const pyphmm_sw_batch& batch = *todo.batch;
    const int64_t first = todo.pairs[c.begin];
    const int64_t ref0 = batch.ref_offsets[first], alt0 = batch.alt_offsets[first];
    descs->resize(c.order.size());
    int64_t cig = 0;
    for (size_t s = 0; s + 1 < c.sub_begin.size(); ++s) {
        Work w;  // work offsets restart in every sub-chunk
        for (int t = c.sub_begin[s]; t < c.sub_begin[s + 1]; ++t) {
            const int64_t i = c.order[t];
            PairDesc& d = (*descs)[t];
            d.m = todo.m(i);
            d.n = todo.n(i);
            d.lanes = todo.lanes;
            d.cols = todo.cols[i];
            d.ref = batch.ref_offsets[i] - ref0;
            d.alt = batch.alt_offsets[i] - alt0;
            d.bt = w.bt_cells;
            d.edge = w.edge_ints;
            d.scratch = w.scratch_ints;
            w += pair_work(d.m, d.n, d.lanes, d.cols);
            d.cigar = cig;
            cig += 2 * (static_cast<int64_t>(d.m) + d.n) + 1;
            const pyphmm_sw_params& prm = batch.params[batch.per_pair ? i : 0];
            d.match = prm.match;
            d.mismatch = prm.mismatch;
            d.open = prm.gap_open;
            d.extend = prm.gap_extend;
            d.strategy = batch.strategies[batch.per_pair ? i : 0];
            d.index = static_cast<int32_t>(i);
        }
    }
    return cig;
}

}  // namespace sw_gpu
}  // namespace pyphmm
