// Every setting the native library reads from the environment, in one table
// (config.cc) with one parser.
//
// Three kinds of setting:
// - user settings, one environment variable each (PYPHMM_BACKEND, ...):
//   the README's configuration table;
// - developer settings, keys of the one variable PYPHMM_DEV
//   ("cuda_arith=exact,cpu_kernel=portable"): kernel choices and tuning
//   values that benchmarks and the tests vary (docs/DEVELOPING.md);
// - test seams, keys of PYPHMM_TEST ("fake_gpu=2,gpu_load=3:0"): stand-in
//   GPUs and injected failures, for the tests only.
//
// The environment is parsed the first time any setting is asked for, and
// the values are cached (calls read settings on their hot path); reload()
// parses it again (pyphmm_config_reload: a process that changes its
// environment, e.g. a test, says so). A value that does not parse, or an
// unknown key in PYPHMM_DEV / PYPHMM_TEST, is an error: check() reports
// the first one, naming the setting, and every entry point of the C ABI
// refuses to run until it is fixed. Settings marked "first use" steer
// decisions taken once per process (the GPU probe and choice, the
// calibration, the CPU kernel), so reloading them changes nothing after that
// point; "reload" settings apply to every call after a reload.
#pragma once
#include <cstdint>
#include <string>

#include "pyphmm.h"

namespace pyphmm {
namespace config {

enum class Knob : int {
    // user settings
    kBackend,      // enum auto|cpu|cuda
    kDevice,       // int, -1 = automatic
    kGpuMinCells,  // int, -1 = calibrate
    kHybrid,       // bool
    kCudaNap,      // int percent, -1 = by MPS (gpu.h)
    kLog,          // enum info|quiet|debug
    // developer settings (PYPHMM_DEV)
    kGpuRetryMs,         // int, 0 = never
    kHybridMinCpuShare,  // int percent
    kHybridGpuThreads,   // int
    kCpuKernel,          // string
    kSwIsa,              // string
    kSwReuse,            // bool
    kSwNearExact,        // bool
    kPackScalar,         // bool
    kCudaArith,          // enum fast|exact
    kCudaConstGaps,      // bool
    kCudaTiming,         // bool
    kCudaTimingEvents,   // bool
    kSwGpuBudgetMb,      // int, 0 = no cap
    kJniTrace,           // int
    kJniCopy,            // enum region|critical
    kNativeReader,       // bool
    // test seams (PYPHMM_TEST)
    kTestFakeGpu,     // int: fake devices (0 = the real backend)
    kTestGpuFailure,  // enum never|always|alternate
    kTestGpuLoad,     // string: per-device busy counts for the fake devices
    kTestGpuFull,     // string: per-device failed starts for the fake devices
    kTestPoolThrow,   // bool: pool workers throw std::bad_alloc on each item
    kTestCores,       // int: cores the process may use (0 = its affinity)
    kCount
};

// Integer value of a bool, int or enum setting (an enum gives the index of
// its choice in the table's list). A setting with a bad value reads as its
// default (check() reports it).
int64_t get(Knob k);
inline bool on(Knob k) { return get(k) != 0; }
// Value of a string setting ("" when unset).
std::string get_string(Knob k);
// Whether the environment sets the setting (to a value that parsed).
bool is_set(Knob k);

void reload();

// PYPHMM_OK, or PYPHMM_E_INVALID with error naming the first setting whose
// value does not parse (or the unknown key) and what it expects.
int check(pyphmm_error* error);

// The user settings, one line each (name, value in use, where it came from,
// what it does), then the developer settings and test seams that are set.
std::string describe();

// Enum indices, in the order of the table's choice lists.
enum Backend { kAuto = 0, kCpu = 1, kCuda = 2 };
enum Log { kLogInfo = 0, kLogQuiet = 1, kLogDebug = 2 };
enum Arith { kFast = 0, kExact = 1 };
enum JniCopy { kRegion = 0, kCritical = 1 };
enum GpuFailure { kNever = 0, kAlways = 1, kAlternate = 2 };

// PYPHMM_LOG=quiet: no informational lines (warnings still print).
inline bool quiet() { return get(Knob::kLog) == kLogQuiet; }
// PYPHMM_LOG=debug: a stderr line per call saying where its work ran.
inline bool debug() { return get(Knob::kLog) == kLogDebug; }

}  // namespace config
}  // namespace pyphmm
