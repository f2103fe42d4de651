/* rill-info - prints the library's version, the CPU it runs on with the features found, and the
 * code path rill chose for each hot loop (elementwise, CRC32C, GEMM), so a user can see what
 * they got. Set RILL_ISA=generic|avx2|avx512 to see a lower choice. */
#include <rill/rill.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1) {
        int help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
        fprintf(help ? stdout : stderr,
                "usage: %s\nPrints rill's version, this CPU's features and the code paths chosen "
                "for them.\n",
                argv[0]);
        return help ? 0 : 2;
    }
    fputs(rill_runtime_info(), stdout);
    return 0;
}
