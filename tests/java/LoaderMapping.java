import com.intel.gkl.pairhmm.IntelPairHmm;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Paths;

/**
 * Loads pyphmm through the shim, waits until COUNT JVMs have done so (a
 * file each in READY_DIR), then prints the libpyphmm.so mapping of this JVM
 * as /proc/self/maps shows it ("... (deleted)" when the file it loaded was
 * replaced by another JVM's extraction).
 *
 *   java -Djava.io.tmpdir=DIR -cp ... LoaderMapping READY_DIR COUNT
 */
public final class LoaderMapping {
    public static void main(String[] args) throws Exception {
        new IntelPairHmm().load(null);
        File ready = new File(args[0]);
        int count = Integer.parseInt(args[1]);
        Files.createFile(Paths.get(args[0], "ready-" + ProcessHandle.current().pid()));
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (ready.list().length < count && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        for (String line : Files.readAllLines(Paths.get("/proc/self/maps"))) {
            int slash = line.indexOf('/');
            if (slash >= 0 && line.contains("libpyphmm.so")) {
                System.out.println(line.substring(slash));
                return;
            }
        }
        System.out.println("-");
    }
}
