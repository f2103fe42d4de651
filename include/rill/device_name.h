/* rill/device_name.h - device names as TensorFlow writes them, parsed into five optional fields.
 *
 * A device name is "/job:<job>/replica:<r>/task:<t>/device:<TYPE>:<id>"; any field may be left
 * out or given as "*", which leaves it unset, and a partial name is a pattern that selects the
 * concrete devices it matches. The helpers here are what placement needs: parsing and printing,
 * the merge that nested device scopes do, the merge that colocation does, and matching a pattern
 * against a device.
 *
 * rill_device_name is a plain value: no allocation, copy it freely. Every function borrows its
 * pointer arguments for the call only; they must not be NULL unless the comment says so. A field
 * counts only when its has_* flag is true; the parser zeroes unset fields, but the functions here
 * never read an unset field, so a struct filled in by hand needs no more than the flags and the
 * fields they name.
 */
#ifndef RILL_DEVICE_NAME_H
#define RILL_DEVICE_NAME_H

#include <rill/status.h>

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Room for the longest string rill_device_name_str can write, NUL included. */
#define RILL_DEVICE_NAME_MAX 160

typedef struct rill_device_name {
    bool has_job, has_replica, has_task, has_type, has_id;
    char job[64];  /* a letter, then letters, digits or '_'; at most 63 characters */
    int replica;   /* >= 0 when parsed */
    int task;      /* >= 0 when parsed */
    char type[32]; /* case kept ("GPU", "gpu", "XLA_CPU"); legacy "/cpu:0" and "/gpu:0" give
                      "CPU" and "GPU"; at most 31 characters */
    int id;        /* >= 0 when parsed */
} rill_device_name;

/* Parses a full or partial device name into *out. Accepts "" and "/" (nothing set), components
 * "/job:", "/replica:", "/task:", "/device:TYPE[:id]" and legacy "/cpu:N", "/CPU:N", "/gpu:N",
 * "/GPU:N", in any order; a repeated component overwrites the earlier one and "*" leaves the field
 * unset. NULL spec means "". On any error returns false, leaves *out unchanged and sets s (may be
 * NULL) to INVALID_ARGUMENT "Malformed device specification '<spec>'". out may be NULL to only
 * check the spec. */
bool rill_device_name_parse(const char *spec, rill_device_name *out, rill_status *s);

/* Parses a local name "TYPE:id" such as "GPU:0" into *out (only type and id set; no wildcard).
 * Fails as rill_device_name_parse does, with the same message, leaving *out unchanged; NULL spec
 * is malformed, and out may be NULL. */
bool rill_device_name_parse_local(const char *spec, rill_device_name *out, rill_status *s);

/* Writes n as "/job:J/replica:R/task:T/device:TYPE:ID" into buf (caller owns, len bytes), fields
 * in that fixed order and only those set; a set type with an unset id gives "TYPE:*", a set id
 * with an unset type "*:ID". An empty name gives "". Output is cut to fit len (always
 * NUL-terminated when len > 0; RILL_DEVICE_NAME_MAX always fits). Returns buf. */
const char *rill_device_name_str(const rill_device_name *n, char *buf, size_t len);

/* Writes the canonical full name "/job:<job>/replica:<r>/task:<t>/device:<type>:<id>" into buf
 * (caller owns, len bytes; cut to fit, NUL-terminated when len > 0). NULL job or type counts as
 * "". Returns buf. */
const char *rill_device_full_name(const char *job, int replica, int task, const char *type, int id,
                                  char *buf, size_t len);

/* The name a node gets inside nested device scopes, as TF's nested tf.device: every field set
 * in inner wins and outer fills the fields inner leaves unset. Returns the result by value. */
rill_device_name rill_device_name_merge_scope(const rill_device_name *outer,
                                              const rill_device_name *inner);

/* Merges other into *target, as colocation merges the devices of a group (TF's MergeDevNames).
 * A field set on one side only is taken. A conflicting job, replica or task is always an error:
 * "Cannot merge devices with incompatible jobs: '<a>' and '<b>'" ("replicas", "tasks"). A
 * conflicting type or id is an error without soft placement ("... incompatible types: ...",
 * "... incompatible ids: ..."); with it a type conflict clears type and id and ends the merge,
 * and an id conflict clears the id. <a> is target as merged up to the conflict, <b> is other, both
 * in rill_device_name_str form. On error returns false, sets s (INVALID_ARGUMENT; may be NULL)
 * and leaves *target unchanged. */
bool rill_device_name_merge(rill_device_name *target, const rill_device_name *other,
                            bool allow_soft_placement, rill_status *s);

/* Copies every field set in other into *target, overwriting (TF's MergeOverrideDevNames). */
void rill_device_name_merge_override(rill_device_name *target, const rill_device_name *other);

/* True when every field set in a is also set in b with the same value (TF's IsSpecification):
 * a is the less specific name. Types compare case-sensitively. */
bool rill_device_name_is_specification(const rill_device_name *a, const rill_device_name *b);

/* True when name has all five fields set and every field set in pattern equals it (TF's
 * IsCompleteSpecification): how a partial spec selects concrete devices. */
bool rill_device_name_matches(const rill_device_name *pattern, const rill_device_name *name);

/* True when all five fields are set. */
bool rill_device_name_is_fully_specified(const rill_device_name *n);

/* Unsets type and id, keeping job, replica and task: soft placement's retry on any device of the
 * same task. */
void rill_device_name_clear_type(rill_device_name *n);

#ifdef __cplusplus
}
#endif
#endif
