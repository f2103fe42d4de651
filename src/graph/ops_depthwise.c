#include "graph_internal.h"

const rill__op_def rill__ops_depthwise[] = {
    {0},
};
