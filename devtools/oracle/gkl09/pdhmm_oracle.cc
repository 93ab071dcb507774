// pdhmm_oracle: Intel GKL 0.9.0's PDHMM, called through GKL's own JNI layer.
//
// This file is the only code that is not GKL's. It is linked with GKL 0.9.0's
// unmodified src/main/native/pdhmm sources, IntelPDHMM.cc included (the JNI
// functions), and gives those JNI functions a minimal in-process JNIEnv: Java
// byte[] / double[] / Object[] / ReadDataHolder / HaplotypeDataHolder are plain
// C++ objects here, field ids resolve the names and signatures GKL asks for, and
// ThrowNew records the pending exception. So the native code runs exactly as
// under a JVM, from IntelPDHMM.initialize(args) -> initNative(...) to
// IntelPDHMM.computeLikelihoods(reads, haps, out) -> computeLikelihoodsNative.
// The Java side of IntelPDHMM (computeLikelihoods' checks and its rethrowing of
// the native exceptions) is mirrored in java_compute_likelihoods() below.
//
// Usage (README.md here):
//   pdhmm_oracle [--region] [--api batch|legacy] [--impl serial|avx2|avx512|fastest]
//                [--threads N] [--max-mem-mb M] [--mode values|time] [--reps K]
// Input on stdin; region mode: "R\tbases\tquals\tins\tdels\tgcp" and
// "H\tbases\tpd" lines (qualities / PD bytes as comma-separated ints, taken
// modulo 256 as Java bytes); pairs mode: "HAP\tPD\tREAD\tQUALS\tINS\tDEL\tGCP".
// Output: one printf("%.17g") value per pair, read-major; or one line
// "ERROR <java exception class>: <message> [native <class>: <message>]" where
// GKL's IntelPDHMM would throw.
//
// APIs: --api batch (default) is IntelPDHMM.computeLikelihoods (JNI
// computeLikelihoodsNative, GATK's entry: all reads x haplotypes of a region in
// one call). Pairs mode has no reads x haplotypes product, so there --api batch
// uses GKL's pair-list entry IntelPDHMM.computePDHMM (JNI computePDHMMNative,
// every pair in one call, arrays padded to the longest read / haplotype as
// GKL's tests do); --api legacy uses that entry in region mode too.
//
// --impl maps to PDHMMNativeArguments.avxLevel (serial=SCALAR, avx2=AVX2,
// avx512=AVX512, fastest=FASTEST_AVAILABLE), --threads N to maxNumberOfThreads
// with openMPSetting FASTEST_AVAILABLE (GATK's default: OpenMP iff N > 1,
// min(N, omp_get_max_threads()) threads), --max-mem-mb to setMaxMemoryInMB
// (GKL's batch code splits a region into batches that fit it).

#include <jni.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "IntelPDHMM.h"

// ---------------------------------------------------------------- fake JVM objects

struct FakeObj {
    enum Kind { CLASS, BYTES, DOUBLES, LONGS, OBJECTS, READ, HAP } kind;
    explicit FakeObj(Kind k) : kind(k) {}
    virtual ~FakeObj() {}
};
struct FakeClass : FakeObj {
    std::string name;
    explicit FakeClass(const std::string& n) : FakeObj(CLASS), name(n) {}
};
struct FakeBytes : FakeObj {
    std::vector<jbyte> v;
    FakeBytes() : FakeObj(BYTES) {}
};
struct FakeDoubles : FakeObj {
    std::vector<jdouble> v;
    FakeDoubles() : FakeObj(DOUBLES) {}
};
struct FakeLongs : FakeObj {
    std::vector<jlong> v;
    FakeLongs() : FakeObj(LONGS) {}
};
struct FakeObjects : FakeObj {
    std::vector<FakeObj*> v;
    FakeObjects() : FakeObj(OBJECTS) {}
};
// ReadDataHolder: readBases, readQuals, insertionGOP, deletionGOP, overallGCP
struct FakeRead : FakeObj {
    FakeBytes f[5];
    FakeRead() : FakeObj(READ) {}
};
// HaplotypeDataHolder: haplotypeBases, haplotypePDBases
struct FakeHap : FakeObj {
    FakeBytes f[2];
    FakeHap() : FakeObj(HAP) {}
};

static FakeClass g_readHolderClass("org/broadinstitute/gatk/nativebindings/pdhmm/ReadDataHolder");
static FakeClass g_hapHolderClass("org/broadinstitute/gatk/nativebindings/pdhmm/HaplotypeDataHolder");
static std::map<std::string, FakeClass*> g_classes;

struct Pending {
    bool set = false;
    std::string cls, msg;
} g_exc;

template <class T>
static T* as(jobject o, FakeObj::Kind k) {
    FakeObj* f = reinterpret_cast<FakeObj*>(o);
    if (f == nullptr || f->kind != k) {
        fprintf(stderr, "pdhmm_oracle: fake JNI: object of unexpected kind\n");
        abort();
    }
    return static_cast<T*>(f);
}
static jobject J(FakeObj* o) { return reinterpret_cast<jobject>(o); }

// ---------------------------------------------------------------- the JNI functions GKL calls

static jclass JNICALL f_FindClass(JNIEnv*, const char* name) {
    FakeClass*& c = g_classes[name];
    if (!c) c = new FakeClass(name);
    return reinterpret_cast<jclass>(c);
}
static jint JNICALL f_ThrowNew(JNIEnv*, jclass clazz, const char* msg) {
    g_exc.set = true;
    g_exc.cls = as<FakeClass>(clazz, FakeObj::CLASS)->name;
    g_exc.msg = msg ? msg : "";
    return 0;
}
static jboolean JNICALL f_ExceptionCheck(JNIEnv*) { return g_exc.set ? JNI_TRUE : JNI_FALSE; }
static void JNICALL f_ExceptionClear(JNIEnv*) { g_exc = Pending(); }
static void JNICALL f_FatalError(JNIEnv*, const char* msg) {
    printf("ERROR FatalError: %s\n", msg);
    fflush(stdout);
    abort();
}
static void JNICALL f_DeleteLocalRef(JNIEnv*, jobject) {}
static jfieldID JNICALL f_GetFieldID(JNIEnv*, jclass clazz, const char* name, const char* sig) {
    static const char* readFields[] = {"readBases", "readQuals", "insertionGOP", "deletionGOP", "overallGCP"};
    static const char* hapFields[] = {"haplotypeBases", "haplotypePDBases"};
    FakeClass* c = as<FakeClass>(clazz, FakeObj::CLASS);
    if (strcmp(sig, "[B") != 0) return nullptr;
    if (c == &g_readHolderClass)
        for (intptr_t i = 0; i < 5; i++)
            if (!strcmp(name, readFields[i])) return reinterpret_cast<jfieldID>(i + 1);
    if (c == &g_hapHolderClass)
        for (intptr_t i = 0; i < 2; i++)
            if (!strcmp(name, hapFields[i])) return reinterpret_cast<jfieldID>(i + 101);
    return nullptr;
}
static jobject JNICALL f_GetObjectField(JNIEnv*, jobject obj, jfieldID id) {
    intptr_t i = reinterpret_cast<intptr_t>(id);
    FakeObj* o = reinterpret_cast<FakeObj*>(obj);
    if (o->kind == FakeObj::READ && i >= 1 && i <= 5) return J(&static_cast<FakeRead*>(o)->f[i - 1]);
    if (o->kind == FakeObj::HAP && i >= 101 && i <= 102) return J(&static_cast<FakeHap*>(o)->f[i - 101]);
    fprintf(stderr, "pdhmm_oracle: fake JNI: bad field id\n");
    abort();
}
static jsize JNICALL f_GetArrayLength(JNIEnv*, jarray a) {
    FakeObj* o = reinterpret_cast<FakeObj*>(a);
    switch (o->kind) {
        case FakeObj::BYTES: return (jsize) static_cast<FakeBytes*>(o)->v.size();
        case FakeObj::DOUBLES: return (jsize) static_cast<FakeDoubles*>(o)->v.size();
        case FakeObj::LONGS: return (jsize) static_cast<FakeLongs*>(o)->v.size();
        case FakeObj::OBJECTS: return (jsize) static_cast<FakeObjects*>(o)->v.size();
        default: fprintf(stderr, "pdhmm_oracle: fake JNI: not an array\n"); abort();
    }
}
static jobject JNICALL f_GetObjectArrayElement(JNIEnv*, jobjectArray a, jsize i) {
    return J(as<FakeObjects>(a, FakeObj::OBJECTS)->v.at((size_t)i));
}
static void JNICALL f_GetByteArrayRegion(JNIEnv*, jbyteArray a, jsize start, jsize len, jbyte* buf) {
    FakeBytes* b = as<FakeBytes>(a, FakeObj::BYTES);
    if (len > 0) memcpy(buf, b->v.data() + start, (size_t)len);
}
// HotSpot copies in Get<Type>ArrayElements and copies back on Release(mode 0).
static jdouble* JNICALL f_GetDoubleArrayElements(JNIEnv*, jdoubleArray a, jboolean* isCopy) {
    FakeDoubles* d = as<FakeDoubles>(a, FakeObj::DOUBLES);
    if (isCopy) *isCopy = JNI_TRUE;
    jdouble* copy = (jdouble*)malloc(std::max<size_t>(1, d->v.size()) * sizeof(jdouble));
    if (!d->v.empty()) memcpy(copy, d->v.data(), d->v.size() * sizeof(jdouble));
    return copy;
}
static void JNICALL f_ReleaseDoubleArrayElements(JNIEnv*, jdoubleArray a, jdouble* elems, jint mode) {
    FakeDoubles* d = as<FakeDoubles>(a, FakeObj::DOUBLES);
    if (mode == 0 || mode == JNI_COMMIT)
        if (!d->v.empty()) memcpy(d->v.data(), elems, d->v.size() * sizeof(jdouble));
    if (mode == 0 || mode == JNI_ABORT) free(elems);
}
static jdoubleArray JNICALL f_NewDoubleArray(JNIEnv*, jsize len) {
    FakeDoubles* d = new FakeDoubles();
    d->v.assign((size_t)len, 0.0);
    return reinterpret_cast<jdoubleArray>(d);
}
static void JNICALL f_SetDoubleArrayRegion(JNIEnv*, jdoubleArray a, jsize start, jsize len, const jdouble* buf) {
    FakeDoubles* d = as<FakeDoubles>(a, FakeObj::DOUBLES);
    if (len > 0) memcpy(d->v.data() + start, buf, (size_t)len * sizeof(jdouble));
}
static void* JNICALL f_GetPrimitiveArrayCritical(JNIEnv*, jarray a, jboolean* isCopy) {
    if (isCopy) *isCopy = JNI_FALSE;
    FakeObj* o = reinterpret_cast<FakeObj*>(a);
    switch (o->kind) {
        case FakeObj::BYTES: return static_cast<FakeBytes*>(o)->v.data();
        case FakeObj::LONGS: return static_cast<FakeLongs*>(o)->v.data();
        case FakeObj::DOUBLES: return static_cast<FakeDoubles*>(o)->v.data();
        default: fprintf(stderr, "pdhmm_oracle: fake JNI: not a primitive array\n"); abort();
    }
}
static void JNICALL f_ReleasePrimitiveArrayCritical(JNIEnv*, jarray, void*, jint) {}

static JNIEnv* make_env() {
    static JNINativeInterface_ fns;
    memset(&fns, 0, sizeof fns);  // any other function: a NULL call, i.e. a crash that shows
    fns.FindClass = f_FindClass;
    fns.ThrowNew = f_ThrowNew;
    fns.ExceptionCheck = f_ExceptionCheck;
    fns.ExceptionClear = f_ExceptionClear;
    fns.FatalError = f_FatalError;
    fns.DeleteLocalRef = f_DeleteLocalRef;
    fns.GetFieldID = f_GetFieldID;
    fns.GetObjectField = f_GetObjectField;
    fns.GetArrayLength = f_GetArrayLength;
    fns.GetObjectArrayElement = f_GetObjectArrayElement;
    fns.GetByteArrayRegion = f_GetByteArrayRegion;
    fns.GetDoubleArrayElements = f_GetDoubleArrayElements;
    fns.ReleaseDoubleArrayElements = f_ReleaseDoubleArrayElements;
    fns.NewDoubleArray = f_NewDoubleArray;
    fns.SetDoubleArrayRegion = f_SetDoubleArrayRegion;
    fns.GetPrimitiveArrayCritical = f_GetPrimitiveArrayCritical;
    fns.ReleasePrimitiveArrayCritical = f_ReleasePrimitiveArrayCritical;
    static JNIEnv env;
    env.functions = &fns;
    return &env;
}

// ---------------------------------------------------------------- IntelPDHMM's Java side

struct JavaError {
    std::string cls, msg;
};

static std::string dotted(std::string s) {
    std::replace(s.begin(), s.end(), '/', '.');
    return s;
}

// IntelPDHMM.initialize(args): initNative(ReadDataHolder.class, HaplotypeDataHolder.class,
// args.openMPSetting.ordinal(), args.maxNumberOfThreads, args.avxLevel.ordinal(), args.getMaxMemoryInMB())
static bool java_initialize(JNIEnv* env, int openMPSetting, int threads, int avxLevel, int maxMemMB, JavaError& err) {
    if (maxMemMB <= 0) {  // PDHMMNativeArguments.setMaxMemoryInMB
        err = {"java.lang.IllegalArgumentException", "maxMemoryInMB must be a positive integer."};
        return false;
    }
    g_exc = Pending();
    Java_com_intel_gkl_pdhmm_IntelPDHMM_initNative(env, nullptr, reinterpret_cast<jclass>(&g_readHolderClass),
                                                   reinterpret_cast<jclass>(&g_hapHolderClass), openMPSetting, threads,
                                                   avxLevel, maxMemMB);
    if (g_exc.set) {  // initNative's exceptions reach the caller as they are
        err = {dotted(g_exc.cls), g_exc.msg};
        g_exc = Pending();
        return false;
    }
    return true;
}

// The native exception as IntelPDHMM's catch clauses rethrow it.
static JavaError rethrown(const std::string& cls, const std::string& msg, bool likelihoods) {
    std::string c = dotted(cls);
    JavaError e;
    bool oom = c == "java.lang.OutOfMemoryError";
    bool iae = c == "java.lang.IllegalArgumentException";
    if (likelihoods) {  // computeLikelihoods
        if (oom)
            e = {c, "Memory allocation failed"};
        else if (iae)
            e = {c, "Ran into invalid argument issue"};
        else
            e = {"java.lang.RuntimeException", "Runtime exception thrown from native pdhmm function call " + msg};
    } else {  // computePDHMM
        if (oom)
            e = {c, "OutOfMemory exception thrown from native pdhmm function call " + msg};
        else if (iae)
            e = {c, "IllegalArgument exception thrown from native pdhmm function call " + msg};
        else
            e = {"java.lang.RuntimeException", "Runtime exception thrown from native pdhmm function call " + msg};
    }
    e.msg += " [native " + c + ": " + msg + "]";
    return e;
}

// IntelPDHMM.computeLikelihoods(readDataArray, haplotypeDataArray, likelihoodArray)
static bool java_compute_likelihoods(JNIEnv* env, FakeObjects* reads, FakeObjects* haps, FakeDoubles* out,
                                     JavaError& err) {
    g_exc = Pending();
    Java_com_intel_gkl_pdhmm_IntelPDHMM_computeLikelihoodsNative(env, nullptr, reinterpret_cast<jobjectArray>(reads),
                                                                 reinterpret_cast<jobjectArray>(haps),
                                                                 reinterpret_cast<jdoubleArray>(out));
    if (g_exc.set) {
        err = rethrown(g_exc.cls, g_exc.msg, true);
        g_exc = Pending();
        return false;
    }
    return true;
}

// Pair-list arrays as IntelPDHMM.computePDHMM takes them.
struct PairArrays {
    FakeBytes hap, pd, read, qual, ins, del, gcp;
    FakeLongs hapLen, readLen;
    int n = 0, maxHap = 0, maxRead = 0;
    long long cells = 0;
};

// IntelPDHMM.computePDHMM(...): its argument checks, then computePDHMMNative
static bool java_compute_pdhmm(JNIEnv* env, PairArrays& a, std::vector<double>& out, JavaError& err) {
    if (a.n <= 0) {
        err = {"java.lang.IllegalArgumentException", "batchSize must be greater than 0."};
        return false;
    }
    if (a.maxHap <= 0) {
        err = {"java.lang.IllegalArgumentException",
               "maxHapLength must be greater than 0. Cannot perform PDHMM on empty sequence"};
        return false;
    }
    if (a.maxRead <= 0) {
        err = {"java.lang.IllegalArgumentException",
               "maxReadLength must be greater than 0. Cannot perform PDHMM on empty sequence"};
        return false;
    }
    g_exc = Pending();
    jdoubleArray r = Java_com_intel_gkl_pdhmm_IntelPDHMM_computePDHMMNative(
        env, nullptr, reinterpret_cast<jbyteArray>(&a.hap), reinterpret_cast<jbyteArray>(&a.pd),
        reinterpret_cast<jbyteArray>(&a.read), reinterpret_cast<jbyteArray>(&a.qual),
        reinterpret_cast<jbyteArray>(&a.ins), reinterpret_cast<jbyteArray>(&a.del),
        reinterpret_cast<jbyteArray>(&a.gcp), reinterpret_cast<jlongArray>(&a.hapLen),
        reinterpret_cast<jlongArray>(&a.readLen), a.n, a.maxHap, a.maxRead);
    if (g_exc.set) {
        err = rethrown(g_exc.cls, g_exc.msg, false);
        g_exc = Pending();
        delete reinterpret_cast<FakeDoubles*>(r);
        return false;
    }
    out = reinterpret_cast<FakeDoubles*>(r)->v;
    delete reinterpret_cast<FakeDoubles*>(r);
    return true;
}

// ---------------------------------------------------------------- input

static std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
        size_t p = s.find(sep, start);
        if (p == std::string::npos) {
            out.push_back(s.substr(start));
            return out;
        }
        out.push_back(s.substr(start, p - start));
        start = p + 1;
    }
}

static void die(const std::string& msg) {
    fprintf(stderr, "pdhmm_oracle: %s\n", msg.c_str());
    exit(2);
}

static void set_bases(FakeBytes& b, const std::string& s) { b.v.assign(s.begin(), s.end()); }

static void set_ints(FakeBytes& b, const std::string& s, int line) {
    b.v.clear();
    std::string t = s;
    // also accept "[1, 2, 3]" (the test files' PD lists)
    t.erase(std::remove_if(t.begin(), t.end(), [](char c) { return c == '[' || c == ']' || c == ' '; }), t.end());
    if (t.empty()) return;
    for (const std::string& x : split(t, ',')) {
        char* end = nullptr;
        long v = strtol(x.c_str(), &end, 10);
        if (x.empty() || *end != '\0')
            die("line " + std::to_string(line) + ": not an integer list: " + s.substr(0, 60));
        b.v.push_back((jbyte)(int8_t)(uint8_t)(v & 0xFF));  // a Java byte
    }
}

struct Input {
    std::vector<FakeRead*> reads;
    std::vector<FakeHap*> haps;
    std::vector<std::pair<FakeHap*, FakeRead*>> pairs;  // pairs mode
};

static Input read_input(bool region) {
    Input in;
    std::string line;
    int n = 0;
    while (std::getline(std::cin, line)) {
        n++;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line[0] == '#') continue;
        std::vector<std::string> f = split(line, '\t');
        if (region) {
            if (f[0] == "R" && f.size() == 6) {
                FakeRead* r = new FakeRead();
                set_bases(r->f[0], f[1]);
                for (int k = 1; k < 5; k++) set_ints(r->f[k], f[k + 1], n);
                in.reads.push_back(r);
            } else if (f[0] == "H" && f.size() == 3) {
                FakeHap* h = new FakeHap();
                set_bases(h->f[0], f[1]);
                set_ints(h->f[1], f[2], n);
                in.haps.push_back(h);
            } else {
                die("line " + std::to_string(n) + ": expected R (6 fields) or H (3 fields)");
            }
        } else {
            if (f.size() != 7) die("line " + std::to_string(n) + ": expected 7 tab-separated fields");
            FakeHap* h = new FakeHap();
            set_bases(h->f[0], f[0]);
            set_ints(h->f[1], f[1], n);
            FakeRead* r = new FakeRead();
            set_bases(r->f[0], f[2]);
            for (int k = 1; k < 5; k++) set_ints(r->f[k], f[k + 2], n);
            in.pairs.push_back({h, r});
        }
    }
    return in;
}

static PairArrays pack_pairs(const std::vector<std::pair<FakeHap*, FakeRead*>>& pairs) {
    PairArrays a;
    a.n = (int)pairs.size();
    for (auto& p : pairs) {
        a.maxHap = std::max(a.maxHap, (int)p.first->f[0].v.size());
        a.maxRead = std::max(a.maxRead, (int)p.second->f[0].v.size());
        a.cells += (long long)p.first->f[0].v.size() * (long long)p.second->f[0].v.size();
    }
    FakeBytes* hb[2] = {&a.hap, &a.pd};
    FakeBytes* rb[5] = {&a.read, &a.qual, &a.ins, &a.del, &a.gcp};
    for (auto* b : hb) b->v.assign((size_t)a.n * a.maxHap, 0);
    for (auto* b : rb) b->v.assign((size_t)a.n * a.maxRead, 0);
    for (int i = 0; i < a.n; i++) {
        FakeHap* h = pairs[i].first;
        FakeRead* r = pairs[i].second;
        for (int k = 0; k < 2; k++)
            std::copy(h->f[k].v.begin(), h->f[k].v.begin() + std::min(h->f[k].v.size(), (size_t)a.maxHap),
                      hb[k]->v.begin() + (size_t)i * a.maxHap);
        for (int k = 0; k < 5; k++)
            std::copy(r->f[k].v.begin(), r->f[k].v.begin() + std::min(r->f[k].v.size(), (size_t)a.maxRead),
                      rb[k]->v.begin() + (size_t)i * a.maxRead);
        a.hapLen.v.push_back((jlong)h->f[0].v.size());
        a.readLen.v.push_back((jlong)r->f[0].v.size());
    }
    return a;
}

// ---------------------------------------------------------------- main

static void usage() {
    fprintf(stderr,
            "usage: pdhmm_oracle [--region] [--api batch|legacy] [--impl serial|avx2|avx512|fastest]\n"
            "                    [--threads N] [--max-mem-mb M] [--mode values|time] [--reps K]\n");
    exit(2);
}

int main(int argc, char** argv) {
    bool region = false;
    std::string api = "batch", impl = "serial", mode = "values";
    int threads = 1, maxMem = 512, reps = 3;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) usage();
            return argv[++i];
        };
        if (a == "--region")
            region = true;
        else if (a == "--api")
            api = next();
        else if (a == "--impl")
            impl = next();
        else if (a == "--threads")
            threads = atoi(next().c_str());
        else if (a == "--max-mem-mb")
            maxMem = atoi(next().c_str());
        else if (a == "--mode")
            mode = next();
        else if (a == "--reps")
            reps = atoi(next().c_str());
        else
            usage();
    }
    // PDHMMNativeArguments.AVXLevel ordinals: FASTEST_AVAILABLE, SCALAR, AVX2, AVX512
    std::map<std::string, int> levels = {{"fastest", 0}, {"serial", 1}, {"scalar", 1}, {"avx2", 2}, {"avx512", 3}};
    if (!levels.count(impl) || (api != "batch" && api != "legacy") || (mode != "values" && mode != "time") ||
        threads < 1 || reps < 1)
        usage();
    const int avxLevel = levels[impl];
    const int OMP_FASTEST_AVAILABLE = 0;  // PDHMMNativeArguments.OpenMPSetting.FASTEST_AVAILABLE

    Input in = read_input(region);
    JNIEnv* env = make_env();
    bool likelihoods = region && api == "batch";

    FakeObjects reads, haps;
    FakeDoubles out;
    PairArrays packed;
    long long cells = 0;
    size_t npairs = 0;
    if (likelihoods) {
        for (FakeRead* r : in.reads) reads.v.push_back(r);
        for (FakeHap* h : in.haps) haps.v.push_back(h);
        out.v.assign(in.reads.size() * in.haps.size(), 0.0);
        for (FakeRead* r : in.reads)
            for (FakeHap* h : in.haps) cells += (long long)r->f[0].v.size() * (long long)h->f[0].v.size();
        npairs = out.v.size();
    } else {
        if (region)  // read-major, as computeLikelihoods orders them
            for (FakeRead* r : in.reads)
                for (FakeHap* h : in.haps) in.pairs.push_back({h, r});
        packed = pack_pairs(in.pairs);
        cells = packed.cells;
        npairs = in.pairs.size();
    }

    auto run_once = [&](std::vector<double>& values, JavaError& err) -> bool {
        if (likelihoods) {
            bool ok = java_compute_likelihoods(env, &reads, &haps, &out, err);
            values = out.v;
            return ok;
        }
        return java_compute_pdhmm(env, packed, values, err);
    };

    JavaError err;
    if (mode == "values") {
        if (!java_initialize(env, OMP_FASTEST_AVAILABLE, threads, avxLevel, maxMem, err)) {
            printf("ERROR %s: %s\n", err.cls.c_str(), err.msg.c_str());
            return 3;
        }
        std::vector<double> values;
        if (!run_once(values, err)) {
            printf("ERROR %s: %s\n", err.cls.c_str(), err.msg.c_str());
            return 0;
        }
        for (double v : values) printf("%.17g\n", v);
        return 0;
    }

    // --mode time: one untimed warm-up call, then `reps` timed calls; 1 thread, then N
    std::vector<int> settings = {1};
    if (threads > 1) settings.push_back(threads);
    for (int t : settings) {
        if (!java_initialize(env, OMP_FASTEST_AVAILABLE, t, avxLevel, maxMem, err)) {
            printf("ERROR %s: %s\n", err.cls.c_str(), err.msg.c_str());
            return 3;
        }
        std::vector<double> values;
        if (!run_once(values, err)) {
            printf("ERROR %s: %s\n", err.cls.c_str(), err.msg.c_str());
            return 0;
        }
        double best = INFINITY;
        for (int k = 0; k < reps; k++) {
            auto t0 = std::chrono::steady_clock::now();
            bool ok = run_once(values, err);
            auto t1 = std::chrono::steady_clock::now();
            if (!ok) {
                printf("ERROR %s: %s\n", err.cls.c_str(), err.msg.c_str());
                return 0;
            }
            best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
        }
        int ompThreads = 1;
#ifdef _OPENMP
        if (t > 1) ompThreads = std::min(t, omp_get_max_threads());
#endif
        printf("threads=%d pairs=%zu cells=%lld best_s=%.9f omp_threads=%d gcups=%.4f\n", t, npairs, cells, best,
               ompThreads, best > 0 ? (double)cells / best / 1e9 : 0.0);
        fflush(stdout);
    }
    return 0;
}
