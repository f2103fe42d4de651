#include "graph_internal.h"

const rill__op_def rill__ops_loss[] = {
    {0},
};
