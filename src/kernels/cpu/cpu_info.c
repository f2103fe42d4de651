/* cpu_info.c - rill_runtime_info(): what this process runs on and the code paths chosen for it
 * (printed by rill-info and rill_ops --version). */
#include <rill/version.h>

#include "../../core/core.h"
#include "gemm.h"
#include "loops.h"
#include "onednn_conv.h"

#include <pthread.h>
#include <stdio.h>

static char info[2048];
static pthread_once_t info_once = PTHREAD_ONCE_INIT;

static void make_info(void)
{
    const rill__cpu_features *f = rill__cpu();
    char feats[512], isas[64] = "";
    rill__cpu_feature_list(feats, sizeof feats);
    size_t k = 0;
    for (int i = 0; i < RILL__ISA_COUNT; i++)
        if (rill__isa_usable((rill__isa)i) && k < sizeof isas)
            k += (size_t)snprintf(isas + k, sizeof isas - k, "%s%s", k ? " " : "",
                                  rill__isa_name((rill__isa)i));
    snprintf(info, sizeof info,
             "rill %s\n"
             "cpu: %s (%s)\n"
             "cpu features: %s\n"
             "elementwise loops: %s (usable here: %s; RILL_ISA chooses a lower one)\n"
             "crc32c: %s\n"
             "gemm: %s (%d)\n"
             "convolutions: %s\n",
             rill_version(), f->model, f->vendor, feats, rill__loops_get()->isa, isas,
             rill__crc32c_path(), rill__gemm_info(), rill__threadpool_size(rill__default_pool()) + 1,
             rill__conv_info());
}

const char *rill_runtime_info(void)
{
    pthread_once(&info_once, make_info);
    return info;
}
