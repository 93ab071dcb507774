/*
 * pyphmm's stand-in for GKL's IntelPairHmm. Placed before GATK on the class
 * path, it makes GATK's native PairHMM (AVX_LOGLESS_CACHING[_OMP],
 * FASTEST_AVAILABLE) run pyphmm: GPU when one is usable, else pyphmm's CPU
 * kernels. Public behaviour follows GKL's class; natives are GKL's symbols,
 * exported by libpyphmm.so.
 *
 * The shim ships exactly three classes (this one, IntelPairHmmOMP and
 * IntelSmithWaterman), so its helpers are private members here.
 */
package com.intel.gkl.pairhmm;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Map;

import org.broadinstitute.gatk.nativebindings.pairhmm.HaplotypeDataHolder;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeArguments;
import org.broadinstitute.gatk.nativebindings.pairhmm.PairHMMNativeBinding;
import org.broadinstitute.gatk.nativebindings.pairhmm.ReadDataHolder;

public class IntelPairHmm implements PairHMMNativeBinding {
    private static boolean libraryLoaded = false;

    boolean useOmp = false;

    public IntelPairHmm() {
    }

    /** Loads libpyphmm.so; false (never an exception) when it cannot. */
    @Override
    public synchronized boolean load(File tmpDir) {
        return loadLibrary(tmpDir);
    }

    @Override
    public void initialize(PairHMMNativeArguments args) {
        if (args == null) {
            args = new PairHMMNativeArguments();
            args.useDoublePrecision = false;
            args.maxNumberOfThreads = 1;
        }
        int threads = Math.max(1, args.maxNumberOfThreads);
        if (useOmp) {
            threads = Math.min(threads, Runtime.getRuntime().availableProcessors());
        }
        // (initNative logs pyphmm's one line: backend, GPU, CPU kernel, threshold)
        initNative(ReadDataHolder.class, HaplotypeDataHolder.class, args.useDoublePrecision, threads);
    }

    @Override
    public void computeLikelihoods(ReadDataHolder[] readDataArray, HaplotypeDataHolder[] haplotypeDataArray,
                                   double[] likelihoodArray)
            throws NullPointerException, OutOfMemoryError, IllegalArgumentException {
        if (readDataArray == null || haplotypeDataArray == null || likelihoodArray == null) {
            throw new NullPointerException("Input is null");
        }
        try {
            if (!computePacked(readDataArray, haplotypeDataArray, likelihoodArray)) {
                computeLikelihoodsNative(readDataArray, haplotypeDataArray, likelihoodArray);
            }
        } catch (OutOfMemoryError e) {
            OutOfMemoryError oom = new OutOfMemoryError("Memory allocation failed: " + e.getMessage());
            oom.initCause(e);
            throw oom;
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("Ran into invalid argument issue: " + e.getMessage(), e);
        }
    }

    // Per-thread buffer of computePacked: GATK calls once per active region, so
    // reuse it; regions beyond MAX_KEPT bytes get a buffer of their own.
    private static final int MAX_KEPT = 64 << 20;
    private static final ThreadLocal<byte[]> SCRATCH = new ThreadLocal<byte[]>();

    /**
     * Checks the holders and packs every array into one byte[] (bases of all
     * reads, then quals, insertion GOPs, deletion GOPs, GCPs, then the
     * haplotypes) for computePackedNative: one JNI copy per call instead of
     * about 17 JNI calls per read. Returns false, computing nothing, when the
     * region does not fit a Java array (the native path handles it).
     */
    private boolean computePacked(ReadDataHolder[] reads, HaplotypeDataHolder[] haps, double[] out) {
        final int nr = reads.length, nh = haps.length;
        if (out.length < (long) nr * nh) {
            throw new IllegalArgumentException("output array holds " + out.length + " values, " + nr
                    + " reads x " + nh + " haplotypes need " + (long) nr * nh);
        }
        if ((long) nr * nh == 0) {
            return true;
        }
        int[] lengths = new int[nr + nh];
        long readTotal = 0, hapTotal = 0;
        for (int r = 0; r < nr; ++r) {
            ReadDataHolder d = reads[r];
            if (d == null) {
                throw new NullPointerException("read holder " + r + " is null");
            }
            int len = checkedLength(d.readBases, r, "readBases", -1);
            checkedLength(d.readQuals, r, "readQuals", len);
            checkedLength(d.insertionGOP, r, "insertionGOP", len);
            checkedLength(d.deletionGOP, r, "deletionGOP", len);
            checkedLength(d.overallGCP, r, "overallGCP", len);
            lengths[r] = len;
            readTotal += len;
        }
        for (int h = 0; h < nh; ++h) {
            HaplotypeDataHolder d = haps[h];
            if (d == null) {
                throw new NullPointerException("haplotype holder " + h + " is null");
            }
            if (d.haplotypeBases == null) {
                throw new NullPointerException("haplotype " + h + ": haplotypeBases is null");
            }
            if (d.haplotypeBases.length == 0) {
                throw new IllegalArgumentException("haplotype " + h + " is empty");
            }
            lengths[nr + h] = d.haplotypeBases.length;
            hapTotal += d.haplotypeBases.length;
        }
        long total = 5 * readTotal + hapTotal;
        if (total > Integer.MAX_VALUE - 16) {
            return false;
        }
        byte[] packed = SCRATCH.get();
        if (packed == null || packed.length < total) {
            packed = new byte[(int) total];
            if (total <= MAX_KEPT) {
                SCRATCH.set(packed);
            }
        }
        int pos = 0;
        for (int k = 0; k < 5; ++k) {
            for (int r = 0; r < nr; ++r) {
                byte[] a = field(reads[r], k);
                System.arraycopy(a, 0, packed, pos, a.length);
                pos += a.length;
            }
        }
        for (int h = 0; h < nh; ++h) {
            byte[] a = haps[h].haplotypeBases;
            System.arraycopy(a, 0, packed, pos, a.length);
            pos += a.length;
        }
        computePackedNative(packed, lengths, nr, nh, out);
        return true;
    }

    private static byte[] field(ReadDataHolder d, int k) {
        switch (k) {
            case 0: return d.readBases;
            case 1: return d.readQuals;
            case 2: return d.insertionGOP;
            case 3: return d.deletionGOP;
            default: return d.overallGCP;
        }
    }

    // Length of one of read r's arrays; expected < 0: the bases (non-empty).
    private static int checkedLength(byte[] a, int r, String name, int expected) {
        if (a == null) {
            throw new NullPointerException("read " + r + ": " + name + " is null");
        }
        if (expected < 0 && a.length == 0) {
            throw new IllegalArgumentException("read " + r + " is empty");
        }
        if (expected >= 0 && a.length != expected) {
            throw new IllegalArgumentException("read " + r + ": " + name + " has " + a.length + " values for "
                    + expected + " bases");
        }
        return a.length;
    }

    /** Logs pyphmm's summary of the process's calls so far (doneNative). */
    @Override
    public void done() {
        doneNative();
    }

    // ---- loading libpyphmm.so -------------------------------------------
    // Order: $PYPHMM_LIBRARY; the jar's copy for this os.arch
    // (pyphmm/native/linux-<arch>/libpyphmm.so), extracted into a directory
    // private to this user; then java.library.path.
    //
    // Shared-machine rules: the extracted file lives in tmpDir (or
    // java.io.tmpdir)/pyphmm-USER-DIGEST, a directory created 0700 and used
    // only while it is owned by this user and writable by nobody else, so no
    // other user can replace the file between its check and System.load; the
    // file is compared with the jar's copy by SHA-256. When that directory is
    // unusable (planted by someone else, wrong mode), a fresh private
    // temporary directory is used instead and removed once loaded.
    static synchronized boolean loadLibrary(File tmpDir) {
        if (libraryLoaded) {
            return true;
        }
        try {
            String explicit = System.getenv("PYPHMM_LIBRARY");
            if (explicit != null && !explicit.isEmpty()) {
                System.load(new File(explicit).getAbsolutePath());
            } else if (!extractAndLoad(tmpDir)) {
                System.loadLibrary("pyphmm");
            }
            libraryLoaded = true;
            return true;
        } catch (UnsatisfiedLinkError | SecurityException e) {
            System.err.println("pyphmm: cannot load libpyphmm.so: " + e);
            return false;
        }
    }

    /** os.arch as the jar's directory names it. */
    static String jarArch(String osArch) {
        String a = osArch == null ? "" : osArch.toLowerCase(java.util.Locale.ROOT);
        if (a.equals("amd64") || a.equals("x86_64")) {
            return "x86_64";
        }
        if (a.equals("aarch64") || a.equals("arm64")) {
            return "aarch64";
        }
        return a;
    }

    /** loadFromJar, saying why on stderr when the extraction itself fails. */
    private static boolean extractAndLoad(File tmpDir) {
        try {
            return loadFromJar(tmpDir);
        } catch (IOException | GeneralSecurityException e) {
            System.err.println("pyphmm: cannot extract libpyphmm.so (" + e + "); set -Djava.io.tmpdir=DIR or "
                    + "PYPHMM_LIBRARY; trying java.library.path");
            return false;
        }
    }

    /**
     * Extracts and loads the jar's library for this os.arch. False when the jar
     * has none, or when it cannot be loaded from the temporary directory for a
     * reason the caller should route around (noexec, an unsafe directory); the
     * caller then tries java.library.path.
     */
    private static boolean loadFromJar(File tmpDir) throws IOException, GeneralSecurityException {
        String arch = jarArch(System.getProperty("os.arch"));
        byte[] bytes = readResource("/pyphmm/native/linux-" + arch + "/libpyphmm.so");
        if (bytes == null) {
            System.err.println("pyphmm: this jar has no libpyphmm.so for os.arch " + System.getProperty("os.arch")
                    + " (linux-" + arch + "); trying java.library.path");
            return false;
        }
        byte[] digest = MessageDigest.getInstance("SHA-256").digest(bytes);
        Path base = (tmpDir != null ? tmpDir : new File(System.getProperty("java.io.tmpdir"))).toPath();
        String problem = unsafeParent(base);
        if (problem != null) {
            System.err.println("pyphmm: not extracting libpyphmm.so into " + base + " (" + problem
                    + "); set -Djava.io.tmpdir=DIR to a directory of your own, or PYPHMM_LIBRARY; "
                    + "trying java.library.path");
            return false;
        }
        String user = System.getProperty("user.name", "user").replaceAll("[^A-Za-z0-9_.-]", "_");
        Path dir = base.resolve("pyphmm-" + user + "-" + hex(digest, 8));
        boolean fresh = false;
        if (!usablePrivateDir(dir)) {
            dir = Files.createTempDirectory(base, "pyphmm-", PosixFilePermissions.asFileAttribute(
                    PosixFilePermissions.fromString("rwx------")));
            fresh = true;
        }
        Path lib = dir.resolve("libpyphmm.so");
        try {
            if (!sameDigest(lib, digest)) {
                writeAtomically(dir, lib, bytes, digest);
            }
            try {
                System.load(lib.toString());
            } catch (UnsatisfiedLinkError e) {
                if (!mountedNoexec(dir)) {
                    throw e;
                }
                System.err.println("pyphmm: cannot load libpyphmm.so from " + dir + ": its file system is mounted "
                        + "noexec; start Java with -Djava.io.tmpdir=DIR on an exec file system (GATK: --tmp-dir DIR) "
                        + "or set PYPHMM_LIBRARY=/path/to/libpyphmm.so; trying java.library.path");
                return false;
            }
        } finally {
            if (fresh) {  // loaded (or not): the mapping outlives the file
                Files.deleteIfExists(lib);
                Files.deleteIfExists(dir);
            }
        }
        return true;
    }

    private static byte[] readResource(String name) throws IOException {
        InputStream in = IntelPairHmm.class.getResourceAsStream(name);
        if (in == null) {
            return null;
        }
        try {
            ByteArrayOutputStream buf = new ByteArrayOutputStream(1 << 22);
            byte[] chunk = new byte[1 << 16];
            int n;
            while ((n = in.read(chunk)) > 0) {
                buf.write(chunk, 0, n);
            }
            return buf.toByteArray();
        } finally {
            in.close();
        }
    }

    /**
     * Why base cannot hold a private directory safely, or null when it can:
     * others may write to it only if it is sticky (as /tmp is), else another
     * user could rename our directory away and put theirs in its place.
     */
    private static String unsafeParent(Path base) throws IOException {
        if (!Files.isDirectory(base)) {
            return "not a directory";
        }
        int mode = (Integer) Files.getAttribute(base, "unix:mode");
        if ((mode & 0022) != 0 && (mode & 01000) == 0) {
            return "writable by other users and not sticky";
        }
        return null;
    }

    /**
     * True when dir exists (creating it 0700 if absent) as a real directory
     * owned by this process's user and writable by nobody else.
     */
    private static boolean usablePrivateDir(Path dir) throws IOException {
        try {
            Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(
                    PosixFilePermissions.fromString("rwx------")));
        } catch (FileAlreadyExistsException e) {
            // someone (this user's other process, or not) made it: check below
        }
        Map<String, Object> a = Files.readAttributes(dir, "unix:uid,mode", LinkOption.NOFOLLOW_LINKS);
        int mode = (Integer) a.get("mode");
        boolean isDir = (mode & 0170000) == 0040000;
        Integer uid = currentUid();
        if (isDir && uid != null && uid.equals(a.get("uid")) && (mode & 0022) == 0) {
            return true;
        }
        System.err.println("pyphmm: " + dir + " is not private to this user (" + (isDir ? "" : "not a directory, ")
                + "owner uid " + a.get("uid") + ", mode " + Integer.toOctalString(mode & 07777)
                + "); using a fresh private directory");
        return false;
    }

    /** This process's uid (the owner of /proc/self), or null if unknown. */
    private static Integer currentUid() {
        try {
            return (Integer) Files.getAttribute(Paths.get("/proc/self"), "unix:uid");
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** True when lib is a regular file whose SHA-256 is digest. */
    private static boolean sameDigest(Path lib, byte[] digest) throws IOException, GeneralSecurityException {
        if (!Files.isRegularFile(lib, LinkOption.NOFOLLOW_LINKS)) {
            return false;
        }
        byte[] have = MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(lib));
        return MessageDigest.isEqual(have, digest);
    }

    /**
     * Publishes bytes as lib. Another JVM of the same user (a second Spark
     * executor, a parallel GATK) may have extracted and loaded the same file
     * meanwhile: replacing it would leave that JVM running a deleted file, so
     * an existing lib with the right digest is kept (link() never replaces).
     */
    private static void writeAtomically(Path dir, Path lib, byte[] bytes, byte[] digest)
            throws IOException, GeneralSecurityException {
        Path tmp = Files.createTempFile(dir, "libpyphmm", ".so.part");  // created 0600
        try {
            Files.write(tmp, bytes);
            try {
                Files.createLink(lib, tmp);
                return;
            } catch (FileAlreadyExistsException e) {
                if (sameDigest(lib, digest)) {
                    return;
                }
            } catch (UnsupportedOperationException | IOException e) {
                // no hard links on this file system: replace, as a rename does
            }
            Files.move(tmp, lib, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** True when the file system holding dir is mounted noexec (/proc/self/mountinfo). */
    private static boolean mountedNoexec(Path dir) {
        try {
            String path = dir.toRealPath().toString();
            String best = "";
            boolean noexec = false;
            for (String line : Files.readAllLines(Paths.get("/proc/self/mountinfo"))) {
                String[] f = line.split(" ");
                if (f.length < 6) {
                    continue;
                }
                String mount = unescapeMount(f[4]);
                boolean under = path.equals(mount) || path.startsWith(mount.endsWith("/") ? mount : mount + "/");
                if (under && mount.length() >= best.length()) {
                    best = mount;
                    noexec = (',' + f[5] + ',').contains(",noexec,");
                }
            }
            return noexec;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    // mountinfo writes space, tab, newline and backslash as \ooo.
    private static String unescapeMount(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); ++i) {
            char c = s.charAt(i);
            if (c == '\\' && i + 3 < s.length()) {
                try {
                    b.append((char) Integer.parseInt(s.substring(i + 1, i + 4), 8));
                    i += 3;
                    continue;
                } catch (NumberFormatException e) {
                    // not an escape: keep the backslash
                }
            }
            b.append(c);
        }
        return b.toString();
    }

    private static String hex(byte[] b, int n) {
        StringBuilder s = new StringBuilder(2 * n);
        for (int i = 0; i < n; ++i) {
            s.append(String.format("%02x", b[i] & 0xff));
        }
        return s.toString();
    }

    // ---- GKL's natives (symbols fixed by this class name) ----------------
    private static native void initNative(Class<?> readDataHolderClass, Class<?> haplotypeDataHolderClass,
                                          boolean doublePrecision, int maxThreads);

    private native void computeLikelihoodsNative(Object[] readDataArray, Object[] haplotypeDataArray,
                                                 double[] likelihoodArray);

    private native void doneNative();

    // pyphmm's packed entry (shim only; see computePacked).
    private native void computePackedNative(byte[] packed, int[] lengths, int numReads, int numHaps,
                                            double[] likelihoodArray);
}
