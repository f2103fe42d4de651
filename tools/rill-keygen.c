/* rill-keygen - makes a cluster secret: `rill-keygen FILE` writes 64 random hexadecimal
 * characters (256 bits from the kernel's generator) to FILE, created with mode 0600 and never
 * overwritten. Every task of the cluster then reads the same file: `--cluster_secret_file=FILE`
 * in the seed's programs, or RILL_CLUSTER_SECRET_FILE=FILE for any server
 * (docs/LAUNCHING.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        int help = argc == 2;
        fprintf(help ? stdout : stderr,
                "usage: %s FILE\nWrites a new cluster secret to FILE (mode 0600; an existing "
                "file is left alone).\n",
                argv[0]);
        return help ? 0 : 2;
    }
    unsigned char key[32];
    size_t got = 0;
    while (got < sizeof key) {
        ssize_t k = getrandom(key + got, sizeof key - got, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            fprintf(stderr, "rill-keygen: no random bytes: %s\n", strerror(errno));
            return 1;
        }
        got += (size_t)k;
    }
    char hex[2 * sizeof key + 2];
    for (size_t i = 0; i < sizeof key; i++) snprintf(hex + 2 * i, 3, "%02x", key[i]);
    hex[2 * sizeof key] = '\n';
    hex[2 * sizeof key + 1] = 0;
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "rill-keygen: cannot create '%s': %s\n", argv[1], strerror(errno));
        return 1;
    }
    size_t n = strlen(hex);
    bool ok = write(fd, hex, n) == (ssize_t)n;
    ok = fsync(fd) == 0 && ok;
    ok = close(fd) == 0 && ok;
    memset(key, 0, sizeof key);
    memset(hex, 0, sizeof hex);
    if (!ok) {
        fprintf(stderr, "rill-keygen: cannot write '%s'\n", argv[1]);
        unlink(argv[1]);
        return 1;
    }
    return 0;
}
