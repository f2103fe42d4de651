/* rill/rill.h - the whole public API. */
#ifndef RILL_RILL_H
#define RILL_RILL_H

#include <rill/status.h>
#include <rill/tensor.h>
#include <rill/graph.h>
#include <rill/ops.h>
#include <rill/session.h>
#include <rill/train.h>
#include <rill/summary.h>
#include <rill/flags.h>
#include <rill/data.h>
#include <rill/device_name.h>
#include <rill/cluster.h>
#include <rill/server.h>
#include <rill/checkpoint.h>
#include <rill/version.h>

#endif
