// Every PYPHMM_* environment variable the native library reads, in one
// table (config.cc) with one parser.
//
// A knob is parsed the first time it is asked for and cached (calls read
// knobs on their hot path); reload() parses every knob again
// (pyphmm_config_reload: a process that changes its environment, e.g. a
// test, says so). A value that does not parse is reported on stderr and the
// default is used. Knobs marked "first use" steer decisions taken once per
// process (the GPU probe and choice, the calibration, the CPU kernel), so
// reloading them changes nothing after that point; "reload" knobs apply to
// every call after a reload.
#pragma once
#include <cstdint>
#include <string>

namespace pyphmm {
namespace config {

enum class Knob : int {
    kBackend,            // enum auto|cpu|cuda
    kDevice,             // int, -1 = automatic
    kGpuMinCells,        // int, -1 = calibrate
    kGpuRetryMs,         // int, 0 = never
    kHybrid,             // bool
    kHybridMinCpuShare,  // int percent
    kHybridGpuThreads,   // int
    kDebugDispatch,      // bool
    kQuiet,              // bool
    kCpuKernel,          // string
    kSwIsa,              // string
    kPackScalar,         // bool
    kCudaArith,          // enum fast|exact
    kCudaConstGaps,      // bool
    kCudaMappedOut,      // int
    kCudaNotify,         // bool
    kCudaNap,            // int percent, -1 = by MPS (gpu.h)
    kCudaSync,           // enum spin|yield|block
    kCudaTiming,         // bool
    kCudaTimingEvents,   // bool
    kSwGpuBudgetMb,      // int, 0 = no cap
    kJniTrace,           // int
    kJniCopy,            // enum region|critical
    kTestFakeGpu,        // int: fake devices (0 = the real backend)
    kTestGpuFailure,     // enum never|always|alternate
    kTestGpuLoad,        // string: per-device busy counts for the fake devices
    kTestGpuFull,        // string: per-device failed starts for the fake devices
    kCount
};

// Integer value of a bool, int or enum knob (an enum gives the index of its
// choice in the table's list).
int64_t get(Knob k);
inline bool on(Knob k) { return get(k) != 0; }
// Value of a string knob ("" when unset).
std::string get_string(Knob k);
// Whether the environment sets the knob (to a value that parsed).
bool is_set(Knob k);

void reload();

// One line per knob: name, current value, where it came from, what it does.
std::string describe();

// Enum indices, in the order of the table's choice lists.
enum Backend { kAuto = 0, kCpu = 1, kCuda = 2 };
enum Arith { kFast = 0, kExact = 1 };
enum JniCopy { kRegion = 0, kCritical = 1 };
enum GpuFailure { kNever = 0, kAlways = 1, kAlternate = 2 };
enum Sync { kSyncSpin = 0, kSyncYield = 1, kSyncBlock = 2 };

}  // namespace config
}  // namespace pyphmm
