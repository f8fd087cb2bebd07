/* SPDX-License-Identifier: MIT */
#pragma once

/* The worker's side of the jail's seccomp-BPF filter: it receives the
 * program the host compiled (core/launch/seccomp.h, with libseccomp loaded at run
 * time) and loads it; the worker never links libseccomp. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Loads a compiled program into the calling thread (requires
 * PR_SET_NO_NEW_PRIVS first). Worker side; no libseccomp needed. */
int seccomp_load_bpf(const void *bpf, size_t len);
