/*
 * pyphmm.h - the one C ABI of pyphmm.
 *
 * Everything that calls into pyphmm goes through this header: the Python
 * package (buildtools/ffi.py feeds the block between the CDEF markers to cffi
 * verbatim), the front ends in native/frontends/ (record files, and the JNI
 * layer that impersonates GKL), and the benchmarks.
 *
 * Conventions
 * - Inputs are packed, contiguous buffers described by offsets, so callers
 *   fill them once and nothing is copied again below this line.
 * - Every entry point returns a PYPHMM_* status and, when given a non-NULL
 *   pyphmm_error, fills it with a readable message. No C++ exception, abort or
 *   signal crosses this ABI: bad input is reported, never crashed on.
 * - All functions are thread-safe; several threads may call at once.
 *
 * The block between the CDEF markers must stay within what cffi's cdef
 * parser accepts: typedefs, plain integer #defines and prototypes.
 */
#ifndef PYPHMM_H
#define PYPHMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility; only this ABI is exported. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* CDEF-BEGIN */

/* 3: options.device honoured + flags, stats GPU timing, info GPU sharing, config; 4: info.cuda_nap_percent;
 * 5: pyphmm_config_check, settings that do not parse are errors; pyphmm_pdhmm; 6: stats.reused_cells */
#define PYPHMM_ABI_VERSION 6

/* ---- status codes ------------------------------------------------------ */
#define PYPHMM_OK            0
#define PYPHMM_E_INVALID     1 /* bad argument or input; message says which */
#define PYPHMM_E_NOMEM       2 /* host allocation failed */
#define PYPHMM_E_UNAVAILABLE 3 /* the backend asked for is not usable here */
#define PYPHMM_E_INTERNAL    4 /* a bug or an unexpected device failure */
/* an entry point declined valid input: pyphmm_pairhmm_file while
 * PYPHMM_DEV's native_reader=0 turns the native record reader off */
#define PYPHMM_E_UNSUPPORTED 5
#define PYPHMM_E_IO          6 /* reading or writing a file failed; message names the file */

/* ---- backends ---------------------------------------------------------- */
#define PYPHMM_BACKEND_AUTO 0 /* CUDA when a usable GPU is present, else CPU */
#define PYPHMM_BACKEND_CPU  1
#define PYPHMM_BACKEND_CUDA 2

typedef struct pyphmm_error {
    int32_t code;      /* same value as the function's return */
    char message[512]; /* NUL-terminated, empty on success */
} pyphmm_error;

/* Initialise with PYPHMM_OPTIONS_INIT (C; see below the CDEF block) or set
 * every field: a zeroed struct pins device 0. */
typedef struct pyphmm_options {
    int32_t backend;          /* PYPHMM_BACKEND_*; env PYPHMM_BACKEND overrides AUTO */
    int32_t threads;          /* CPU threads; <= 0 means all available cores */
    int32_t double_precision; /* PairHMM: 1 = every pair in double */
    int32_t device;           /* CUDA device ordinal of this call, or PYPHMM_DEVICE_AUTO */
    int32_t hybrid;           /* PairHMM whole workloads: PYPHMM_HYBRID_* */
    int32_t flags;            /* PYPHMM_FLAG_* */
} pyphmm_options;

/* options.device: PYPHMM_DEVICE_AUTO lets pyphmm choose (PYPHMM_DEVICE if
 * set, else the process's GPU, calls of several threads spread over every
 * usable GPU); N >= 0 runs the call on CUDA device N (after
 * CUDA_VISIBLE_DEVICES), PYPHMM_E_INVALID if there is none such, and
 * PYPHMM_E_UNAVAILABLE while this process's GPU had no room for it (an MPS
 * server at its client limit; pyphmm tries again every
 * PYPHMM_DEV's gpu_retry_ms). */
#define PYPHMM_DEVICE_AUTO -1
/* options.flags */
#define PYPHMM_FLAG_TIMING 1 /* fill the stats' GPU kernel and host-phase times (costs a few us) */

/* Whole-workload scheduling of a PairHMM call with several regions under
 * AUTO: GPU and CPU threads share the regions (GPU the largest, CPU the
 * smallest) when the CPU's predicted share of the work is at least
 * PYPHMM_DEV's hybrid_min_cpu_share percent (default 5), else the GPU computes them
 * alone in one call. DEFAULT (0, what a zeroed struct says) follows env
 * PYPHMM_HYBRID=0|1 and is OFF when unset; a GPU must be usable. */
#define PYPHMM_HYBRID_DEFAULT 0
#define PYPHMM_HYBRID_ON      1
#define PYPHMM_HYBRID_OFF     2

/* What a call did: filled when the caller passes a non-NULL pointer. */
typedef struct pyphmm_stats {
    int64_t pairs;        /* read x haplotype pairs (PairHMM) or alignments (SW) */
    int64_t cells;        /* sum of len(read) * len(haplotype) (or ref x alt) */
    int64_t double_pairs; /* PairHMM pairs whose result came from double */
    int32_t backend_used; /* PYPHMM_BACKEND_CPU or _CUDA */
    int32_t fell_back;    /* 1 if a GPU failure made this call run on the CPU */
    double seconds;       /* wall time spent in the kernels' backend */
    /* PairHMM: where the regions ran (a call under AUTO may use both) */
    int64_t gpu_regions;
    int64_t gpu_cells;
    int64_t cpu_regions;
    int64_t cpu_cells;
    int32_t hybrid;             /* 1 if GPU and CPU threads shared the regions */
    int32_t hybrid_gpu_threads; /* threads driving the GPU in that mode */
    int32_t hybrid_cpu_threads; /* CPU worker threads in that mode */
    /* GPU work of the call (CUDA backend) */
    int32_t device;          /* CUDA device that ran the GPU part, -1 if none */
    int64_t const_pairs;     /* pairs in the kernels with the call's quality triple as constants */
    double kernel_seconds;   /* PYPHMM_FLAG_TIMING: time at least one kernel was running (0 with
                                PYPHMM_DEV=cuda_timing_events=0) */
    double phase_seconds[5]; /* PYPHMM_FLAG_TIMING: host time in setup, pack, enqueue, wait, copy-out */
    int64_t reused_cells;    /* SW on the CPU: cells of `cells` taken from an earlier pair of the same
                                thread (same ref, parameters and edge rule, alt sharing a prefix) */
} pyphmm_stats;

/* ---- PairHMM -----------------------------------------------------------
 * One region (GATK's "active region"): every read against every haplotype.
 *
 * Read r occupies bytes [read_offsets[r], read_offsets[r+1]) of each of the
 * five read arrays; haplotype h occupies [hap_offsets[h], hap_offsets[h+1])
 * of hap_bases. Offsets are absolute indices into those arrays, so many
 * regions can share one packed buffer and one offsets array.
 * Quality arrays hold raw phred values (not ASCII+33); each value is masked
 * with & 127 before use, as GKL does. Bases A,C,G,T,N are significant;
 * like GKL, any other byte is read as A.
 */
typedef struct pyphmm_region {
    int32_t num_reads;
    int32_t num_haps;
    const uint8_t* read_bases;
    const uint8_t* read_quals;   /* base qualities */
    const uint8_t* read_ins;     /* insertion gap-open penalties */
    const uint8_t* read_dels;    /* deletion gap-open penalties */
    const uint8_t* read_gcp;     /* gap continuation penalties */
    const int64_t* read_offsets; /* num_reads + 1 entries, non-decreasing */
    const uint8_t* hap_bases;
    const int64_t* hap_offsets; /* num_haps + 1 entries, non-decreasing */
} pyphmm_region;

/*
 * log10 likelihoods of every read given every haplotype, for num_regions
 * regions. Region k writes num_reads*num_haps doubles at out + sum of the
 * previous regions' counts, laid out out[r * num_haps + h].
 * Precision follows GKL: float with a per-pair double recompute when the
 * float result underflows; options->double_precision = 1 for all-double.
 * Empty reads or haplotypes are rejected (PYPHMM_E_INVALID).
 */
int pyphmm_pairhmm(const pyphmm_region* regions, int64_t num_regions, double* out, const pyphmm_options* options,
                   pyphmm_stats* stats, pyphmm_error* error);

/* ---- record files (front end: native/frontends/records/) ----------------
 * A record file (docs/RECORD_FORMAT.md) computed as pyphmm_pairhmm would,
 * results written to out_path in the results format (values as Python's
 * repr()), in chunks of up to chunk_cells cells (<= 0: a default) while the
 * next chunks are parsed (on a few threads) and the previous one formatted.
 * It accepts the language pyphmm.io's reader accepts and reports a
 * malformed file as PYPHMM_E_INVALID with that reader's message naming
 * file and line; a failed read or write is PYPHMM_E_IO naming the file,
 * memory that runs out PYPHMM_E_NOMEM naming the line of the first record
 * being read or computed; PYPHMM_E_UNSUPPORTED, before anything is opened,
 * while PYPHMM_DEV's native_reader=0 turns this reader off.
 * out_path may be partly written on failure. *records receives the number
 * of records, *stats the sums over the chunks' calls. progress (may be
 * NULL) points at 3 values, records, pairs and cells written so far, which
 * the call updates (atomically) after each chunk for another thread to read.
 */
int pyphmm_pairhmm_file(const char* in_path, const char* out_path, const pyphmm_options* options, int64_t chunk_cells,
                        int64_t* records, pyphmm_stats* stats, int64_t* progress, pyphmm_error* error);

/* ---- Smith-Waterman (GATK semantics) -------------------------------------
 * Overhang strategy codes are GKL's byte codes. */
#define PYPHMM_SW_SOFTCLIP      9
#define PYPHMM_SW_INDEL         10
#define PYPHMM_SW_LEADING_INDEL 11
#define PYPHMM_SW_IGNORE        12
#define PYPHMM_SW_MAX_LENGTH    32767 /* longest ref or alt accepted (GKL's limit) */

typedef struct pyphmm_sw_params {
    int32_t match; /* > 0 in every GATK preset; any value accepted */
    int32_t mismatch;
    int32_t gap_open;   /* <= 0 */
    int32_t gap_extend; /* <= 0 */
} pyphmm_sw_params;

/*
 * A batch of alignments. Pair i aligns alt [alt_offsets[i], alt_offsets[i+1])
 * to ref [ref_offsets[i], ref_offsets[i+1]). params and strategies hold
 * either one entry for the whole batch or one per pair (per_pair = 1).
 * CIGAR i is written NUL-terminated at cigars + cigar_offsets[i]; a CIGAR
 * never needs more than 2 * (len(ref) + len(alt)) + 1 bytes, and the caller
 * must reserve at least that (pyphmm checks it): cigar_offsets holds
 * num_pairs + 1 entries and pair i owns [cigar_offsets[i], cigar_offsets[i+1]).
 * Gap penalties must be <= 0, and max(|match|, |mismatch|, |gap_open|,
 * |gap_extend|) * (len(ref) + len(alt) + 2) <= 2^29 (int32 scores never
 * overflow); anything else is PYPHMM_E_INVALID.
 */
typedef struct pyphmm_sw_batch {
    int64_t num_pairs;
    const uint8_t* ref;
    const int64_t* ref_offsets; /* num_pairs + 1 entries */
    const uint8_t* alt;
    const int64_t* alt_offsets; /* num_pairs + 1 entries */
    const pyphmm_sw_params* params;
    const int8_t* strategies;
    int32_t per_pair;
} pyphmm_sw_batch;

int pyphmm_sw_align(const pyphmm_sw_batch* batch, char* cigars, const int64_t* cigar_offsets,
                    int32_t* alignment_offsets, const pyphmm_options* options, pyphmm_stats* stats,
                    pyphmm_error* error);

/*
 * After pyphmm_sw_align: moves the batch's CIGARs (each NUL-terminated at the
 * start of its slot) to the front of `cigars`, one after another, each still
 * followed by its NUL, so a caller can split them in one pass. Returns the
 * bytes used (the sum of the CIGAR lengths + num_pairs).
 */
int64_t pyphmm_sw_compact_cigars(char* cigars, const int64_t* cigar_offsets, int64_t num_pairs);

/*
 * One pair on the calling thread's CPU: what GATK's HaplotypeCaller does per
 * call. Same result and validation as pyphmm_sw_align with a batch of one
 * and the CPU backend, minus the batch description (the per-call cost counts
 * when each call is tens of microseconds). cigar holds cigar_capacity bytes,
 * at least 2 * (ref_len + alt_len) + 1; strategy is a PYPHMM_SW_* code.
 */
int pyphmm_sw_align_one(const uint8_t* ref, int64_t ref_len, const uint8_t* alt, int64_t alt_len,
                        const pyphmm_sw_params* params, int32_t strategy, char* cigar, int64_t cigar_capacity,
                        int32_t* alignment_offset, pyphmm_error* error);

/* ---- PDHMM (GKL 0.9's partially determined PairHMM) ----------------------
 * The PairHMM of GATK's --use-pdhmm and DRAGEN mode: a haplotype carries one
 * PD byte per base that marks undetermined events (docs/PDHMM.md):
 * a SNP position whose bits name the bases it may also be, and deletion
 * spans (DEL_START on the first base, DEL_END on the last) that may be
 * absent. Computed in double, as GKL is, with GKL's tables and GATK's
 * rules (GKL's serial code: the deletion state carries across rows).
 *
 * Read r occupies [read_offsets[r], read_offsets[r+1]) of the five read
 * arrays (raw phred qualities, not ASCII+33); haplotype h occupies
 * [hap_offsets[h], hap_offsets[h+1]) of hap_bases and of hap_pd. Bases are
 * compared as raw bytes ('N' matches everything, lowercase is not
 * uppercase); at a SNP position a read base matches if it is one of the
 * position's bases (A, C, G, T in either case).
 * Results: region k writes num_reads*num_haps doubles at out + the previous
 * regions' counts, out[r * num_haps + h]; -inf where the likelihood is
 * zero (an empty read or haplotype, qualities of 0), as in GKL.
 * PYPHMM_E_INVALID (message names region, read and position): an
 * insertion, deletion or gap continuation quality above 127 (a negative
 * Java byte), a base quality of 255 (GKL has no table entry for it; 128..254
 * are used as GKL uses them), a read base other than A, C, G, T (either
 * case) or N at a SNP position whose base it does not equal, offsets that
 * are not non-decreasing, a region without reads or haplotypes.
 * PYPHMM_E_INTERNAL: a result above 0 or NaN (GKL's failure status, a
 * RuntimeException in Java; no valid input is known to give one).
 * options->double_precision is ignored: PDHMM is double throughout.
 * Backend: AUTO runs a call on the GPU when one is usable and the call has
 * at least the calibrated PDHMM threshold's cells, else on the CPU; CUDA
 * is PYPHMM_E_UNAVAILABLE without a usable GPU; a failing GPU call is
 * recomputed on the CPU. */
#define PYPHMM_PD_SNP       1
#define PYPHMM_PD_DEL_START 2
#define PYPHMM_PD_DEL_END   4
#define PYPHMM_PD_A         8
#define PYPHMM_PD_C         16
#define PYPHMM_PD_G         32
#define PYPHMM_PD_T         64

typedef struct pyphmm_pd_region {
    int32_t num_reads;
    int32_t num_haps;
    const uint8_t* read_bases;
    const uint8_t* read_quals;
    const uint8_t* read_ins;
    const uint8_t* read_dels;
    const uint8_t* read_gcp;
    const int64_t* read_offsets; /* num_reads + 1 entries, non-decreasing */
    const uint8_t* hap_bases;
    const uint8_t* hap_pd;      /* one PD byte per haplotype base, at hap_bases' offsets */
    const int64_t* hap_offsets; /* num_haps + 1 entries, non-decreasing */
} pyphmm_pd_region;

int pyphmm_pdhmm(const pyphmm_pd_region* regions, int64_t num_regions, double* out, const pyphmm_options* options,
                 pyphmm_stats* stats, pyphmm_error* error);

/* ---- library information ------------------------------------------------ */
typedef struct pyphmm_info {
    char version[32];
    int32_t abi_version;
    int32_t cuda_compiled; /* 1 if this build contains CUDA kernels */
    int32_t cuda_usable;   /* 1 if a GPU answered at run time */
    int32_t device_count;
    int32_t device; /* ordinal AUTO would use, -1 if none */
    char device_name[256];
    char cuda_status[256];        /* why CUDA is or is not usable */
    int32_t cpu_threads;          /* default CPU thread count */
    int32_t jni_compiled;         /* 1 if GKL's JNI entry points are exported */
    char cpu_kernel[64];          /* name of the CPU PairHMM kernel in use */
    int64_t gpu_min_cells;        /* PairHMM calls below this (at cpu_threads threads) run on the CPU under AUTO */
    int32_t gpu_min_cells_source; /* PYPHMM_THRESHOLD_* */
    double calib_gpu_call_us;     /* calibration: fixed cost of one GPU call (0 if none ran) */
    double calib_gpu_gcups;       /* calibration: GPU cells/s beyond that cost, / 1e9 */
    double calib_cpu_gcups;       /* calibration: CPU cells/s at cpu_threads threads, / 1e9 */
    int32_t hybrid;               /* 1 if whole-workload calls under AUTO share GPU and CPU */
    int32_t hybrid_gpu_threads;   /* threads that drive the GPU in that mode */
    /* GPU sharing (several threads, processes or GPUs) */
    int32_t usable_devices;      /* GPUs AUTO calls may use */
    int32_t device_pinned;       /* 1 if PYPHMM_DEVICE pins every call to `device` */
    char device_choice[128];     /* how `device` was chosen */
    int32_t mps;                 /* 1 if an MPS server serves this process's GPU work */
    int32_t gpu_other_processes; /* other processes on `device` when it was chosen, -1 unknown */
    char mps_pipe_dir[256];      /* MPS pipe directory in use (or the default one) */
    int32_t backend;             /* what a call asks for once PYPHMM_BACKEND has overridden AUTO:
                                   PYPHMM_BACKEND_AUTO, _CPU or _CUDA */
    int32_t cuda_nap_percent;    /* share of a per-region GPU call's expected wait that its thread
                                   sleeps before it spins (PYPHMM_CUDA_NAP; unset: 60 under MPS, else 0) */
} pyphmm_info;

/* Where info.gpu_min_cells comes from. */
#define PYPHMM_THRESHOLD_DEFAULT    0 /* fixed default: no usable GPU, or calibration failed */
#define PYPHMM_THRESHOLD_CALIBRATED 1 /* measured at first use in this process */
#define PYPHMM_THRESHOLD_ENV        2 /* PYPHMM_GPU_MIN_CELLS */

void pyphmm_get_info(pyphmm_info* info);

/* The same, as a call with these options meets the library: cpu_threads is
 * the CPU threads such a call uses, gpu_min_cells (and its source) the
 * threshold at that count, backend what the options ask for, device the
 * GPU such a call prefers. NULL options: exactly pyphmm_get_info. (For
 * callers that report their own settings, such as GKL's JNI entry points.) */
void pyphmm_get_info_for(const pyphmm_options* options, pyphmm_info* info);

/* ---- configuration -------------------------------------------------------
 * Writes the settings the library reads (one line each: name, value, source,
 * meaning; the user settings, then PYPHMM_DEV's keys) into buf,
 * NUL-terminated and truncated to capacity; returns the length of the whole
 * text. */
int64_t pyphmm_config_describe(char* buf, int64_t capacity);
/* Parses the environment again (for tests). Decisions taken once per
 * process (GPU probe and choice, calibration, CPU kernel) stay as taken. */
void pyphmm_config_reload(void);
/* PYPHMM_OK, or PYPHMM_E_INVALID with a message naming the first setting in
 * the environment whose value does not parse (or an unknown key of
 * PYPHMM_DEV / PYPHMM_TEST). Every other entry point refuses to run with
 * the same error while one does. */
int pyphmm_config_check(pyphmm_error* error);

/* CDEF-END */

/* C callers: pyphmm_options opts = PYPHMM_OPTIONS_INIT; */
#define PYPHMM_OPTIONS_INIT \
    { PYPHMM_BACKEND_AUTO, 0, 0, PYPHMM_DEVICE_AUTO, PYPHMM_HYBRID_DEFAULT, 0 }

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* PYPHMM_H */
