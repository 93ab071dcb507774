/*
 * Loads libpyphmm.so for the shim's classes (IntelPairHmm, IntelPairHmmOMP,
 * IntelSmithWaterman), once per class loader.
 *
 * Order: $PYPHMM_LIBRARY; the jar's copy for this os.arch
 * (pyphmm/native/linux-<arch>/libpyphmm.so), extracted into a directory
 * private to this user; then java.library.path.
 *
 * Shared-machine rules: the extracted file lives in tmpDir (or
 * java.io.tmpdir)/pyphmm-USER-DIGEST, a directory created 0700 and used
 * only while it is owned by this user and writable by nobody else, so no
 * other user can replace the file between its check and System.load; the
 * file is compared with the jar's copy by SHA-256. When that directory is
 * unusable (planted by someone else, wrong mode), a fresh private
 * temporary directory is used instead and removed once loaded.
 */
package pyphmm.shim;

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

public final class LibraryLoader {
    private static boolean libraryLoaded = false;

    private LibraryLoader() {
    }

    /** Loads libpyphmm.so once; false (never an exception) when it cannot, with the reason on stderr. */
    public static synchronized boolean load(File tmpDir) {
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
    public static String jarArch(String osArch) {
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
        InputStream in = LibraryLoader.class.getResourceAsStream(name);
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
}
